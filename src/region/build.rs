//! Building the table from the assignment: region instances created on
//! demand, each fitted and planned once its spill sources are done, then
//! laid out, then every tensor placed through its root.

use std::collections::VecDeque;

use super::assign::Roots;
use super::config::RegionConfig;
use super::description::MemoryLevel;
use super::instance::{front_bytes, PlanContext};
use super::layout::{lay_out, Block};
use super::model::{Model, TensorId};
use super::spill::{fit, Fitted};
use super::table::{RegionInstance, RegionTable, SpillRecord, TensorPlacement};
use super::tensor::TensorKind;
use crate::plan::{align_up, Lifetime};
use crate::status::{Error, Result};

/// A region instance before planning.
struct Pending {
    description: usize,
    name: String,
    /// Root tensors it plans (spilled-in ones appended as they come).
    tensors: Vec<TensorId>,
}

/// The instances of one build, and what fitting them did.
pub struct Work<'a> {
    model: &'a Model,
    config: &'a RegionConfig,
    levels: Vec<MemoryLevel>,
    instances: Vec<Pending>,
    /// Per description: its shared instance, once created.
    shared: Vec<Option<usize>>,
    /// Per description: its instances, in creation order.
    by_description: Vec<Vec<usize>>,
    /// Moves, one per tensor, with instance indices in creation order.
    spills: Vec<SpillRecord>,
    /// Per tensor: its record in `spills`, once it moved.
    spill_of: Vec<Option<usize>>,
}

impl<'a> Work<'a> {
    /// No instances yet. `config` must be valid.
    pub fn new(model: &'a Model, config: &'a RegionConfig) -> Self {
        let n = config.descriptions().len();
        let levels = config
            .descriptions()
            .iter()
            .map(|d| config.level(&d.properties.level).expect("a valid configuration knows its levels"))
            .collect();
        Work {
            model,
            config,
            levels,
            instances: Vec::new(),
            shared: vec![None; n],
            by_description: vec![Vec::new(); n],
            spills: Vec::new(),
            spill_of: vec![None; model.len()],
        }
    }

    fn create(&mut self, description: usize, name: String) -> usize {
        self.instances.push(Pending { description, name, tensors: Vec::new() });
        self.by_description[description].push(self.instances.len() - 1);
        self.instances.len() - 1
    }

    /// Description `d`'s shared instance, created on demand.
    fn shared_instance(&mut self, d: usize) -> usize {
        match self.shared[d] {
            Some(i) => i,
            None => {
                let i = self.create(d, self.config.descriptions()[d].name.clone());
                self.shared[d] = Some(i);
                i
            }
        }
    }

    /// Root `id` goes to description `d`: its shared instance, or one of
    /// its own, named `<description>/<tensor>` (`<description>/<function>/
    /// <tensor>` outside the first function).
    pub fn take(&mut self, d: usize, id: TensorId) {
        let description = &self.config.descriptions()[d];
        let instance = if description.properties.per_tensor {
            let t = &self.model.tensors()[id];
            let name = if self.model.function_index(id) == Some(0) {
                format!("{}/{}", description.name, t.name)
            } else {
                format!("{}/{}/{}", description.name, t.function, t.name)
            };
            self.create(d, name)
        } else {
            self.shared_instance(d)
        };
        self.instances[instance].tensors.push(id);
    }

    /// Descriptions ordered so that every one comes after those spilling
    /// into it (spill targets form no cycle in a valid configuration).
    fn spill_order(&self) -> Vec<usize> {
        let descriptions = self.config.descriptions();
        let target = |d: usize| {
            descriptions[d].properties.spill_to.as_deref().and_then(|to| self.config.description(to)).map(|(i, _)| i)
        };
        let mut sources = vec![0usize; descriptions.len()];
        for d in 0..descriptions.len() {
            if let Some(t) = target(d) {
                sources[t] += 1;
            }
        }
        let mut ready: VecDeque<usize> = (0..descriptions.len()).filter(|&d| sources[d] == 0).collect();
        let mut order = Vec::with_capacity(descriptions.len());
        while let Some(d) = ready.pop_front() {
            order.push(d);
            if let Some(t) = target(d) {
                sources[t] -= 1;
                if sources[t] == 0 {
                    ready.push_back(t);
                }
            }
        }
        debug_assert_eq!(order.len(), descriptions.len(), "validated: no spill cycle");
        order
    }

    /// Fits and plans every instance, moving spilled tensors on.
    pub fn fit_all(&mut self, ctx: &mut PlanContext) -> Result<Vec<Fitted>> {
        let config = self.config;
        let mut fitted: Vec<Option<Fitted>> = Vec::new();
        for d in self.spill_order() {
            let props = &config.descriptions()[d].properties;
            let mut k = 0;
            while let Some(&i) = self.by_description[d].get(k) {
                k += 1;
                let mut tensors = std::mem::take(&mut self.instances[i].tensors);
                tensors.sort_unstable();
                let mut f = fit(ctx, &self.instances[i].name, tensors, props)?;
                if !f.moved.is_empty() {
                    let to_name = props.spill_to.as_deref().expect("only a region with a spill region moves");
                    let (to_d, _) = config.description(to_name).expect("validated spill target");
                    let to = self.shared_instance(to_d);
                    for (tensor, reason) in std::mem::take(&mut f.moved) {
                        self.instances[to].tensors.push(tensor);
                        self.spilled(tensor, i, to, reason);
                    }
                }
                if fitted.len() < self.instances.len() {
                    fitted.resize_with(self.instances.len(), || None);
                }
                fitted[i] = Some(f);
            }
        }
        Ok(fitted.into_iter().map(|f| f.expect("every instance's description was fitted")).collect())
    }

    /// Records that `tensor` moved from instance `from` to `to`: a new
    /// record, or, for a tensor spilled into `from` before, its record
    /// extended (the region its rule chose stays its origin).
    fn spilled(&mut self, tensor: TensorId, from: usize, to: usize, reason: String) {
        match self.spill_of[tensor] {
            Some(k) => {
                let s = &mut self.spills[k];
                s.via.push(s.to);
                s.to = to;
                s.reason = format!("{}; then {reason}", s.reason);
            }
            None => {
                self.spill_of[tensor] = Some(self.spills.len());
                self.spills.push(SpillRecord { tensor, from, to, via: Vec::new(), reason });
            }
        }
    }

    /// Refuses an instance holding a constant and a per-run tensor, unless
    /// its description allows it: the error names the region, one tensor
    /// of each and how it got there.
    fn check_semantics(&self, fitted: &[Fitted]) -> Result<()> {
        let tensors = self.model.tensors();
        for (i, f) in fitted.iter().enumerate() {
            let description = &self.config.descriptions()[self.instances[i].description];
            if description.properties.mix_constants {
                continue;
            }
            let is_constant = |&&id: &&TensorId| tensors[id].kind == TensorKind::Constant;
            let (Some(&constant), Some(&per_run)) =
                (f.tensors.iter().find(is_constant), f.tensors.iter().find(|id| !is_constant(id)))
            else {
                continue;
            };
            let how = |id: TensorId| match self.spill_of[id] {
                Some(k) => format!(", spilled from '{}'", self.instances[self.spills[k].from].name),
                None => String::new(),
            };
            let what = |id: TensorId| format!("'{}' ({}{})", tensors[id].name, tensors[id].kind.name(), how(id));
            return Err(Error::invalid(format!(
                "region '{}' would hold both constant {} and per-run {}: constants and tensors whose bytes change \
                 from run to run do not share a region unless its description allows it (mix_constants = true, \
                 NNM_REGION_MIX_CONSTANTS)",
                self.instances[i].name,
                what(constant),
                what(per_run)
            )));
        }
        Ok(())
    }

    /// Lays out the instances and places every tensor through its root.
    /// `lifetimes`: every tensor's, on the run's timeline.
    pub fn finish(self, roots: &Roots, lifetimes: &[Lifetime], fitted: Vec<Fitted>) -> Result<RegionTable> {
        self.check_semantics(&fitted)?;
        let descriptions = self.config.descriptions();
        // A per-tensor name (`d/f/x`) can equal another instance's (a
        // tensor `f/x` of the first function, or a description named so):
        // regions are found by name, so two may not share one.
        let mut names: Vec<&str> = self.instances.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::invalid(format!(
                "two regions would both be named '{}' (a per-tensor region is named <description>/<tensor>, or \
                 <description>/<function>/<tensor> outside the first function): rename a tensor, function or region",
                pair[0]
            )));
        }
        // Description order, per-tensor instances in model order (the order
        // they were created in).
        let mut given: Vec<usize> = (0..self.instances.len()).collect();
        crate::sort::sort_by_key(&mut given, |&i| self.instances[i].description);
        // A per-tensor description with a base address stacks its
        // instances from there, in model order, each at its alignment.
        let mut blocks: Vec<Block> = Vec::with_capacity(given.len());
        let mut next_base: Option<u64> = None;
        for (k, &i) in given.iter().enumerate() {
            let d = self.instances[i].description;
            let plan = &fitted[i].plan;
            let name = &self.instances[i].name;
            let first_of_description = k == 0 || self.instances[given[k - 1]].description != d;
            let props = &descriptions[d].properties;
            // A tensor aligned above its region's alignment raises the
            // plan's; a fixed base that is not a multiple of it would
            // misalign that tensor's address.
            let base = match props.base_address {
                None => None,
                Some(base) if base % plan.alignment != 0 => {
                    return Err(Error::invalid(format!(
                        "region '{name}': its fixed base address {base:#x} is not a multiple of {} B, the largest \
                         alignment of the region and its tensors",
                        plan.alignment
                    )))
                }
                Some(base) if first_of_description => Some(base),
                Some(_) => Some(align_up(next_base.expect("set by the previous instance"), plan.alignment)?),
            };
            if let Some(at) = base {
                next_base = Some(at.checked_add(plan.size).ok_or_else(|| {
                    Error::overflow(format!("region '{name}' of {} B at {at:#x} ends past 64-bit addresses", plan.size))
                })?);
            }
            blocks.push(Block {
                name,
                level: &self.levels[d].name,
                rank: self.levels[d].rank,
                size: plan.size,
                alignment: plan.alignment,
                base,
            });
        }
        let layout = lay_out(&blocks)?;
        // Instance (creation order) to its index in the table, and its base.
        let mut index = vec![0usize; self.instances.len()];
        let mut base = vec![0u64; self.instances.len()];
        for (at, &b) in layout.order.iter().enumerate() {
            index[given[b]] = at;
            base[given[b]] = layout.addresses[b];
        }
        let n = self.model.len();
        let (mut root_instance, mut root_offset) = (vec![0usize; n], vec![0u64; n]);
        for (i, f) in fitted.iter().enumerate() {
            let front = front_bytes(&descriptions[self.instances[i].description].properties, f.plan.alignment)?;
            for (&id, &offset) in f.tensors.iter().zip(&f.plan.offsets) {
                root_instance[id] = i;
                root_offset[id] = front + offset;
            }
        }
        let mut spilled = vec![false; n];
        for s in &self.spills {
            spilled[s.tensor] = true;
        }
        let mut regions: Vec<RegionInstance> = layout
            .order
            .iter()
            .map(|&b| {
                let i = given[b];
                let d = self.instances[i].description;
                let plan = &fitted[i].plan;
                RegionInstance {
                    name: self.instances[i].name.clone(),
                    description: d,
                    description_id: descriptions[d].id,
                    level: self.levels[d].name.clone(),
                    level_rank: self.levels[d].rank,
                    base_address: base[i],
                    fixed_base: descriptions[d].properties.base_address.is_some(),
                    size: plan.size,
                    peak: plan.peak,
                    lower_bound: plan.lower_bound,
                    algorithm: plan.algorithm,
                    proven_optimal: plan.proven_optimal,
                    attributes: descriptions[d].attributes.clone(),
                    tensors: Vec::new(),
                }
            })
            .collect();
        let mut placements = Vec::with_capacity(n);
        for (id, t) in self.model.tensors().iter().enumerate() {
            let (root, inside) = roots.of[id];
            let i = root_instance[root];
            let offset = root_offset[root] + inside;
            regions[index[i]].tensors.push(id);
            placements.push(TensorPlacement {
                name: t.name.clone(),
                function: t.function.clone(),
                kind: t.kind,
                size: t.size,
                region: index[i],
                offset,
                address: base[i] + offset,
                spilled: spilled[root],
                lifetime: lifetimes[id],
            });
        }
        let spills = self
            .spills
            .into_iter()
            .map(|s| SpillRecord {
                from: index[s.from],
                to: index[s.to],
                via: s.via.iter().map(|&i| index[i]).collect(),
                ..s
            })
            .collect();
        Ok(RegionTable { levels: layout.levels, regions, placements, spills })
    }
}
