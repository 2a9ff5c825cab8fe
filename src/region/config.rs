//! A configuration: memory levels and the ordered, first-match list of
//! region descriptions.

use super::description::{MemoryLevel, RegionDescription, DEFAULT_LEVEL};
use super::tensor::Tensor;
use crate::plan::{align_up, check_alignment};
use crate::status::{Error, Result, Status};

/// Memory levels and region descriptions. The first description whose rule
/// matches a tensor takes it: [`RegionConfig::prepend`] a rule to override
/// what a later one would take. Every failing call leaves the configuration
/// exactly as it was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionConfig {
    levels: Vec<MemoryLevel>,
    descriptions: Vec<RegionDescription>,
}

impl RegionConfig {
    /// No levels (the default level, [`DEFAULT_LEVEL`] rank 0, is always
    /// there) and no descriptions.
    pub fn new() -> Self {
        RegionConfig::default()
    }

    /// Adds a memory level. Errors on an empty or repeated name
    /// (`AlreadyExists`); [`DEFAULT_LEVEL`] may be defined once, to give it
    /// another rank.
    pub fn add_level(&mut self, level: MemoryLevel) -> Result<()> {
        if level.name.is_empty() {
            return Err(Error::invalid("memory level name is empty"));
        }
        if self.levels.iter().any(|l| l.name == level.name) {
            return Err(Error::new(Status::AlreadyExists, format!("memory level '{}' is defined twice", level.name)));
        }
        self.levels.push(level);
        Ok(())
    }

    /// The level named `name`: a defined one, or the default level.
    pub fn level(&self, name: &str) -> Option<MemoryLevel> {
        self.levels
            .iter()
            .find(|l| l.name == name)
            .cloned()
            .or_else(|| (name == DEFAULT_LEVEL).then(|| MemoryLevel { name: DEFAULT_LEVEL.to_string(), rank: 0 }))
    }

    /// The defined levels, in the order added.
    pub fn levels(&self) -> &[MemoryLevel] {
        &self.levels
    }

    /// Adds a description at the end (matched last).
    pub fn append(&mut self, description: RegionDescription) -> Result<()> {
        self.check(&description)?;
        self.descriptions.push(description);
        Ok(())
    }

    /// Adds a description at the front (matched first): overrides what the
    /// others would take.
    pub fn prepend(&mut self, description: RegionDescription) -> Result<()> {
        self.check(&description)?;
        self.descriptions.insert(0, description);
        Ok(())
    }

    /// The descriptions, in match order.
    pub fn descriptions(&self) -> &[RegionDescription] {
        &self.descriptions
    }

    /// The description named `name`.
    pub fn description(&self, name: &str) -> Option<(usize, &RegionDescription)> {
        self.descriptions.iter().enumerate().find(|(_, d)| d.name == name)
    }

    /// The first description whose rule matches `tensor`.
    pub fn first_match(&self, tensor: &Tensor) -> Option<usize> {
        self.descriptions.iter().position(|d| d.rule.matches(tensor))
    }

    /// Sets (or replaces) attribute `key` of the description named
    /// `region` to `value`. Errors, changing nothing: no description of that
    /// name (`NotFound`), an empty key.
    pub fn set_attribute(&mut self, region: &str, key: &str, value: &str) -> Result<()> {
        if key.is_empty() {
            return Err(Error::invalid(format!("region '{region}': attribute key is empty")));
        }
        let index = self.description_index(region)?;
        self.descriptions[index].set_attribute(key, value);
        Ok(())
    }

    /// The value of attribute `key` of the description named `region`.
    /// Errors (`NotFound`): no such description, no such attribute.
    pub fn attribute(&self, region: &str, key: &str) -> Result<&str> {
        let d = &self.descriptions[self.description_index(region)?];
        d.attribute(key).ok_or_else(|| {
            let keys: Vec<&str> = d.attributes.iter().map(|(k, _)| k.as_str()).collect();
            Error::new(
                Status::NotFound,
                format!("region '{region}' has no attribute '{key}' (attributes: {})", keys.join(", ")),
            )
        })
    }

    /// The index of the description named `region`; the `NotFound` error
    /// lists the names there are.
    fn description_index(&self, region: &str) -> Result<usize> {
        self.description(region).map(|(i, _)| i).ok_or_else(|| {
            let names: Vec<&str> = self.descriptions.iter().map(|d| d.name.as_str()).collect();
            Error::new(
                Status::NotFound,
                format!("no region description named '{region}' (known: {})", names.join(", ")),
            )
        })
    }

    /// Checks one description against itself and the list: a valid rule, an
    /// id and a name not yet used (`AlreadyExists`), an alignment that is a
    /// power of two, a known level, reserved bytes that fit the capacity
    /// once rounded as the region's size is (the front ones up to the
    /// alignment, then front plus back up to it),
    /// attribute keys not empty nor repeated, no spill to itself. Spill
    /// targets are checked by [`RegionConfig::validate`] (they may be added
    /// later).
    fn check(&self, d: &RegionDescription) -> Result<()> {
        if d.name.is_empty() {
            return Err(Error::invalid(format!("region description {} has an empty name", d.id)));
        }
        let what = format!("region '{}' (id {})", d.name, d.id);
        if let Some(other) = self.descriptions.iter().find(|o| o.id == d.id) {
            return Err(Error::new(
                Status::AlreadyExists,
                format!("{what}: id {} is already used by region '{}'", d.id, other.name),
            ));
        }
        if self.descriptions.iter().any(|o| o.name == d.name) {
            return Err(Error::new(Status::AlreadyExists, format!("{what}: a region of that name already exists")));
        }
        d.rule.validate().map_err(|e| Error::invalid(format!("{what}: {}", e.message())))?;
        let p = &d.properties;
        check_alignment(p.alignment).map_err(|e| Error::invalid(format!("{what}: {}", e.message())))?;
        if let Some(base) = p.base_address {
            if base % p.alignment != 0 {
                return Err(Error::invalid(format!(
                    "{what}: base address {base:#x} is not a multiple of its alignment {}",
                    p.alignment
                )));
            }
        }
        if self.level(&p.level).is_none() {
            let known: Vec<&str> =
                self.levels.iter().map(|l| l.name.as_str()).chain(std::iter::once(DEFAULT_LEVEL)).collect();
            return Err(Error::new(
                Status::NotFound,
                format!("{what}: unknown memory level '{}' (known: {})", p.level, known.join(", ")),
            ));
        }
        let overflow =
            || Error::overflow(format!("{what}: reserved bytes {} + {} overflow", p.reserved_front, p.reserved_back));
        p.reserved_front.checked_add(p.reserved_back).ok_or_else(overflow)?;
        if let Some(capacity) = p.capacity {
            // The region's size even without a tensor, rounded as the build
            // rounds it: the front bytes up to the alignment (so that the
            // first tensor is aligned), then the whole. Above the capacity,
            // no tensor can ever go in.
            let front = align_up(p.reserved_front, p.alignment).map_err(|_| overflow())?;
            let empty = front.checked_add(p.reserved_back).ok_or_else(overflow)?;
            let empty = align_up(empty, p.alignment).map_err(|_| overflow())?;
            if empty > capacity {
                return Err(Error::invalid(format!(
                    "{what}: reserved bytes ({} B front, {} B back; {empty} B rounded to its alignment {}, the \
                     front up to a multiple of it, then the whole) exceed its capacity {capacity} B",
                    p.reserved_front, p.reserved_back, p.alignment
                )));
            }
        }
        if p.spill_to.as_deref() == Some(d.name.as_str()) {
            return Err(Error::invalid(format!("{what} spills to itself")));
        }
        for (i, (key, _)) in d.attributes.iter().enumerate() {
            if key.is_empty() || d.attributes[..i].iter().any(|(k, _)| k == key) {
                return Err(Error::invalid(format!("{what}: attribute key '{key}' is empty or repeated")));
            }
        }
        Ok(())
    }

    /// Checks the whole list: every spill target names a description that is
    /// not per-tensor, and following spill targets never comes back to
    /// where it started.
    pub fn validate(&self) -> Result<()> {
        self.descriptions.iter().try_for_each(|d| self.validate_spill_chain(d))
    }

    /// What [`RegionConfig::validate`] checks, for the spill chain that
    /// starts at `d` alone: lets a caller (the configuration file) say
    /// which description's spill target is wrong.
    pub(crate) fn validate_spill_chain(&self, d: &RegionDescription) -> Result<()> {
        let mut seen = vec![d.name.as_str()];
        let mut at = d;
        while let Some(target) = at.properties.spill_to.as_deref() {
            let (_, next) = self.description(target).ok_or_else(|| {
                Error::new(
                    Status::NotFound,
                    format!("region '{}' spills to '{target}', which is not a region", at.name),
                )
            })?;
            if next.properties.per_tensor {
                return Err(Error::invalid(format!(
                    "region '{}' spills to '{target}', a per-tensor region; spill to a shared region",
                    at.name
                )));
            }
            if seen.contains(&target) {
                return Err(Error::invalid(format!("spill targets form a cycle: {} -> {target}", seen.join(" -> "))));
            }
            seen.push(target);
            at = next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::description::RegionProperties;
    use crate::region::rule::Rule;

    #[test]
    fn duplicates_and_unknown_levels_are_refused_and_change_nothing() {
        let mut c = RegionConfig::glow_defaults();
        assert_eq!(c.descriptions().len(), 5);
        let e = c.append(RegionDescription::new(0, "x", Rule::Any)).unwrap_err();
        assert_eq!(e.status(), Status::AlreadyExists);
        let e = c.prepend(RegionDescription::new(9, "activations", Rule::Any)).unwrap_err();
        assert_eq!(e.status(), Status::AlreadyExists);
        let sram = RegionProperties { level: "sram".into(), ..RegionProperties::default() };
        let e = c.prepend(RegionDescription::new(9, "fast", Rule::Any).with_properties(sram.clone())).unwrap_err();
        assert_eq!(e.status(), Status::NotFound);
        assert!(c.prepend(RegionDescription::new(9, "empty", Rule::And(vec![]))).is_err());
        assert_eq!(c.descriptions().len(), 5);
        c.add_level(MemoryLevel { name: "sram".into(), rank: 0 }).unwrap();
        c.prepend(RegionDescription::new(9, "fast", Rule::Any).with_properties(sram)).unwrap();
        assert_eq!(c.descriptions()[0].name, "fast");
    }

    #[test]
    fn reserved_bytes_are_checked_against_the_capacity_as_the_region_rounds_them() {
        let reserved = |front, back, alignment, capacity| {
            let p = RegionProperties {
                reserved_front: front,
                reserved_back: back,
                alignment,
                capacity: Some(capacity),
                ..RegionProperties::default()
            };
            RegionConfig::new().append(RegionDescription::new(1, "a", Rule::Any).with_properties(p))
        };
        // 59 B in 64 B at alignment 256: the region is 256 B even empty.
        let e = reserved(59, 0, 256, 64).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.message(),
            "region 'a' (id 1): reserved bytes (59 B front, 0 B back; 256 B rounded to its alignment 256, the front \
             up to a multiple of it, then the whole) exceed its capacity 64 B"
        );
        // 1 B and 1 B: the front rounds up to 256 before the back comes.
        assert!(reserved(1, 1, 256, 256).unwrap_err().message().contains("; 512 B rounded"));
        assert!(reserved(1, 1, 256, 512).is_ok() && reserved(0, 59, 256, 256).is_ok());
        assert_eq!(reserved(u64::MAX - 8, 0, 64, 64).unwrap_err().status(), Status::Overflow);
    }

    #[test]
    fn spill_targets_must_exist_and_not_cycle() {
        let mut c = RegionConfig::new();
        let spill = |to: &str| RegionProperties { spill_to: Some(to.into()), ..RegionProperties::default() };
        c.append(RegionDescription::new(1, "a", Rule::Any).with_properties(spill("b"))).unwrap();
        assert_eq!(c.validate().unwrap_err().status(), Status::NotFound);
        c.append(RegionDescription::new(2, "b", Rule::Any).with_properties(spill("a"))).unwrap();
        assert!(c.validate().unwrap_err().message().contains("cycle"));
    }
}
