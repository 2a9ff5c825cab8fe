//! The configuration file, in TOML: memory levels, regions, their rules and
//! properties, so that changing where tensors go is a file edit, not a
//! rebuild. `examples/regions.toml` is a commented example.
//!
//! ```toml
//! defaults = true          # optional: true appends Glow's five default regions
//!                          # after this file's; false never adds them (a file
//!                          # without regions then takes no tensor); left out,
//!                          # the defaults are used when the file has no region
//! [[level]]                # optional; level "memory" rank 0 always exists
//! name = "sram"            # required, unique ("memory" may be given to change its rank)
//! rank = 0                 # required: lower is closer to the compute
//!
//! [[region]]
//! name = "fc-weights"      # required, unique
//! id = 10                  # optional: default = smallest id not used by any region
//!                          # of the file (or the defaults), in file order
//! level = "sram"           # default "memory"
//! planner = "sequential"   # any nnmem algorithm name: "auto" (default), "sequential"
//!                          # (Glow's preserve allocation order), "floor-first", ...
//! reuse = false            # default true
//! per_tensor = false       # default false
//! alignment = 64           # default 64
//! base_address = 0x2000_0000   # optional
//! capacity = "256 KiB"     # optional, not 0: unlimited when left out; the reserved
//!                          # bytes must fit it as the region's size rounds them:
//!                          # front up to the alignment, + back, up to the alignment
//! reserved_front = 0       # default 0 (rounded up to the base address's alignment)
//! reserved_back = 0        # default 0
//! spill = "ddr-weights"    # optional: the region tensors move to past the capacity
//! mix_constants = false    # default false: a region instance holding both constants
//!                          # and per-run tensors (any other kind) fails the build
//! rule = { and = [ { kind = "constant" }, { tag = "op=fc" } ] }   # required
//! [region.attributes]      # optional string attributes for the backend, in file order
//! bank = "0"
//! ```
//!
//! Byte counts (`alignment`, `base_address`, `capacity`, `reserved_*`, the
//! ends of a `size` rule) are a non-negative TOML integer (`0x` hex and `_`
//! separators included) or a string: a decimal or `0x` hex number, then an
//! optional unit, `B`, `KiB`, `MiB`, `GiB` (powers of 1024) or `KB`, `MB`,
//! `GB` (powers of 1000): `"256 KiB"`, `"0xFFFF_0000_0000_0000"` (strings
//! also reach past the largest TOML integer, 2^63 - 1).
//!
//! A rule is an inline table. Its keys: `all_tensors = true` (every
//! tensor), `kind = "constant"` (a tensor kind: constant, mutable, input,
//! output, input-output, activation, view), `name`, `name_prefix`,
//! `name_glob` (`*` and `?`), `size = { min = .., max = .. }` (bytes, both
//! ends inclusive, either one optional), `dtype`, `tag = "key=value"` (the
//! tag has that value) or `tag = "key"` (the tensor has the tag),
//! `function`, `view = true`, `and = [rules]`, `or = [rules]`, `not = rule`.
//! A table of several keys means all of them (AND, in file order).
//!
//! Every error, in TOML syntax or in meaning, starts with the line and the
//! column (1-based, counted in characters) it is about: unknown keys, wrong
//! types, negative or overflowing numbers, unknown units, kinds and
//! algorithms, empty rules, empty `and`/`or` lists, and what
//! [`RegionConfig::add_level`], [`RegionConfig::append`] and
//! [`RegionConfig::validate`] refuse (at the level or region, the `spill`
//! key for spill targets).

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::config::RegionConfig;
use super::defaults::default_descriptions;
use super::description::{MemoryLevel, RegionDescription, RegionProperties};
use super::rule::Rule;
use super::tensor::TensorKind;
use crate::plan::Algorithm;
use crate::status::{Error, Result, Status};
use read::{
    array, attributes, boolean, fail, invalid_type, located, spanned, string, structure, unsigned32, Read, Shape,
};

mod read;

impl RegionConfig {
    /// Reads a configuration from TOML text (the format is in this module's
    /// documentation); errors start with `line L, column C: `. With
    /// `defaults = true`, Glow's five default descriptions come after the
    /// file's; with `defaults` left out, they are the configuration when the
    /// file describes no region (Glow's rule: no user-defined regions, the
    /// defaults); `defaults = false` never adds them.
    pub fn from_toml_str(text: &str) -> Result<RegionConfig> {
        let source = Source { text };
        let root = DeTable::parse(text).map_err(|e| source.toml_error(&e))?;
        let file = read_file(&root)
            .map_err(|e| source.at(e.span.unwrap_or_else(|| root.span()), Error::invalid(e.message.trim_end())))?;
        source.build(&file)
    }

    /// Reads a configuration from a TOML file; errors start with the path
    /// (`NotFound` when there is no such file).
    pub fn from_toml_path(path: &Path) -> Result<RegionConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            let status =
                if e.kind() == std::io::ErrorKind::NotFound { Status::NotFound } else { Status::InvalidArgument };
            Error::new(status, format!("{}: cannot read the region configuration: {e}", path.display()))
        })?;
        RegionConfig::from_toml_str(&text)
            .map_err(|e| Error::new(e.status(), format!("{}: {}", path.display(), e.message())))
    }
}

/// The file as written; `Spanned` keeps where each part is, for errors that
/// are found after reading.
struct FileToml {
    defaults: Option<Spanned<bool>>,
    level: Vec<Spanned<LevelToml>>,
    region: Vec<Spanned<RegionToml>>,
}

struct LevelToml {
    name: String,
    rank: u32,
}

struct RegionToml {
    name: String,
    id: Option<u32>,
    level: Option<String>,
    planner: Option<Spanned<String>>,
    reuse: Option<bool>,
    per_tensor: Option<bool>,
    alignment: Option<Bytes>,
    base_address: Option<Bytes>,
    capacity: Option<Spanned<Bytes>>,
    reserved_front: Option<Bytes>,
    reserved_back: Option<Bytes>,
    spill: Option<Spanned<String>>,
    mix_constants: Option<bool>,
    rule: Spanned<RuleToml>,
    attributes: Option<Attributes>,
}

#[derive(Default)]
struct RuleToml {
    all_tensors: Option<Spanned<bool>>,
    kind: Option<Spanned<String>>,
    name: Option<Spanned<String>>,
    name_prefix: Option<Spanned<String>>,
    name_glob: Option<Spanned<String>>,
    size: Option<Spanned<SizeToml>>,
    dtype: Option<Spanned<String>>,
    tag: Option<Spanned<String>>,
    function: Option<Spanned<String>>,
    view: Option<Spanned<bool>>,
    and: Option<Spanned<Vec<Spanned<RuleToml>>>>,
    or: Option<Spanned<Vec<Spanned<RuleToml>>>>,
    not: Option<Box<Spanned<RuleToml>>>,
}

/// The keys of a rule, for the error on an empty one.
const RULE_KEYS: &str =
    "all_tensors, kind, name, name_prefix, name_glob, size, dtype, tag, function, view, and, or, not";

struct SizeToml {
    min: Option<Bytes>,
    max: Option<Bytes>,
}

/// A byte count: a non-negative TOML integer or a string with a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bytes(u64);

const UNITS: [(&str, u64); 7] = [
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
];

/// Parses `"256 KiB"`, `"0x2000_0000"`, `"64"`: a decimal or `0x` hex
/// number (`_` separators allowed), then an optional unit.
fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let (digits, radix, rest) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => {
            let end = hex.find(|c: char| !(c.is_ascii_hexdigit() || c == '_')).unwrap_or(hex.len());
            (&hex[..end], 16, &hex[end..])
        }
        None => {
            let end = t.find(|c: char| !(c.is_ascii_digit() || c == '_')).unwrap_or(t.len());
            (&t[..end], 10, &t[end..])
        }
    };
    let digits: String = digits.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() {
        return Err(format!("'{text}' is not a byte count: it does not start with a number (e.g. \"256 KiB\")"));
    }
    let number = u64::from_str_radix(&digits, radix).map_err(|_| format!("'{text}' overflows 64 bits"))?;
    let unit = rest.trim_start();
    let scale = if unit.is_empty() {
        1
    } else {
        let known: Vec<&str> = UNITS.iter().map(|(name, _)| *name).collect();
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, scale)| *scale)
            .ok_or_else(|| format!("unknown unit '{unit}' in '{text}' (known: {})", known.join(", ")))?
    };
    number.checked_mul(scale).ok_or_else(|| format!("'{text}' overflows 64 bits"))
}

/// `[region.attributes]`: string values, in file order.
struct Attributes(Vec<(String, String)>);

/// What a byte count may be, for the error on a value of another type.
const BYTES_EXPECTED: &str = "a byte count: a non-negative integer, or a string such as \"256 KiB\"";

fn bytes(v: &DeValue<'_>) -> Read<Bytes> {
    match v {
        DeValue::Integer(i) => {
            match (i64::from_str_radix(i.as_str(), i.radix()), u64::from_str_radix(i.as_str(), i.radix())) {
                (Ok(signed), _) => {
                    u64::try_from(signed).map(Bytes).or_else(|_| fail(format!("negative byte count {signed}")))
                }
                (Err(_), Ok(unsigned)) => Ok(Bytes(unsigned)),
                (Err(_), Err(_)) => invalid_type(v, BYTES_EXPECTED),
            }
        }
        DeValue::String(text) => parse_bytes(text).map(Bytes).or_else(fail),
        _ => invalid_type(v, BYTES_EXPECTED),
    }
}

const FILE: Shape = Shape { name: "FileToml", fields: &["defaults", "level", "region"], required: &[] };

fn read_file(root: &Spanned<DeTable<'_>>) -> Read<FileToml> {
    let mut file = FileToml { defaults: None, level: Vec::new(), region: Vec::new() };
    read::table_fields(root.get_ref(), &FILE, &mut |k, v| {
        match k {
            0 => file.defaults = Some(spanned(v, boolean)?),
            1 => file.level = located(v, |v| array(v, |e| spanned(e, read_level)))?,
            _ => file.region = located(v, |v| array(v, |e| spanned(e, read_region)))?,
        }
        Ok(())
    })
    .map_err(|mut e| {
        e.span.get_or_insert_with(|| root.span());
        e
    })?;
    Ok(file)
}

const LEVEL: Shape = Shape { name: "LevelToml", fields: &["name", "rank"], required: &["name", "rank"] };

fn read_level(v: &DeValue<'_>) -> Read<LevelToml> {
    let (mut name, mut rank) = (None, None);
    structure(v, &LEVEL, &mut |k, v| {
        match k {
            0 => name = Some(located(v, string)?),
            _ => rank = Some(located(v, unsigned32)?),
        }
        Ok(())
    })?;
    Ok(LevelToml {
        name: name.expect("structure() refuses a level without a name"),
        rank: rank.expect("structure() refuses a level without a rank"),
    })
}

const REGION: Shape = Shape {
    name: "RegionToml",
    fields: &[
        "name",
        "id",
        "level",
        "planner",
        "reuse",
        "per_tensor",
        "alignment",
        "base_address",
        "capacity",
        "reserved_front",
        "reserved_back",
        "spill",
        "mix_constants",
        "rule",
        "attributes",
    ],
    required: &["name", "rule"],
};

fn read_region(v: &DeValue<'_>) -> Read<RegionToml> {
    let (mut name, mut rule) = (None, None);
    let mut r = RegionToml {
        name: String::new(),
        id: None,
        level: None,
        planner: None,
        reuse: None,
        per_tensor: None,
        alignment: None,
        base_address: None,
        capacity: None,
        reserved_front: None,
        reserved_back: None,
        spill: None,
        mix_constants: None,
        rule: Spanned::new(0..0, RuleToml::default()),
        attributes: None,
    };
    structure(v, &REGION, &mut |k, v| {
        match k {
            0 => name = Some(located(v, string)?),
            1 => r.id = Some(located(v, unsigned32)?),
            2 => r.level = Some(located(v, string)?),
            3 => r.planner = Some(spanned(v, string)?),
            4 => r.reuse = Some(located(v, boolean)?),
            5 => r.per_tensor = Some(located(v, boolean)?),
            6 => r.alignment = Some(located(v, bytes)?),
            7 => r.base_address = Some(located(v, bytes)?),
            8 => r.capacity = Some(spanned(v, bytes)?),
            9 => r.reserved_front = Some(located(v, bytes)?),
            10 => r.reserved_back = Some(located(v, bytes)?),
            11 => r.spill = Some(spanned(v, string)?),
            12 => r.mix_constants = Some(located(v, boolean)?),
            13 => rule = Some(spanned(v, read_rule)?),
            _ => r.attributes = Some(Attributes(located(v, attributes)?)),
        }
        Ok(())
    })?;
    r.name = name.expect("structure() refuses a region without a name");
    r.rule = rule.expect("structure() refuses a region without a rule");
    Ok(r)
}

const RULE: Shape = Shape {
    name: "RuleToml",
    fields: &[
        "all_tensors",
        "kind",
        "name",
        "name_prefix",
        "name_glob",
        "size",
        "dtype",
        "tag",
        "function",
        "view",
        "and",
        "or",
        "not",
    ],
    required: &[],
};

fn read_rule(v: &DeValue<'_>) -> Read<RuleToml> {
    let mut r = RuleToml::default();
    let rules = |v: &Spanned<DeValue<'_>>| spanned(v, |v| array(v, |e| spanned(e, read_rule)));
    structure(v, &RULE, &mut |k, v| {
        match k {
            0 => r.all_tensors = Some(spanned(v, boolean)?),
            1 => r.kind = Some(spanned(v, string)?),
            2 => r.name = Some(spanned(v, string)?),
            3 => r.name_prefix = Some(spanned(v, string)?),
            4 => r.name_glob = Some(spanned(v, string)?),
            5 => r.size = Some(spanned(v, read_size)?),
            6 => r.dtype = Some(spanned(v, string)?),
            7 => r.tag = Some(spanned(v, string)?),
            8 => r.function = Some(spanned(v, string)?),
            9 => r.view = Some(spanned(v, boolean)?),
            10 => r.and = Some(rules(v)?),
            11 => r.or = Some(rules(v)?),
            _ => r.not = Some(Box::new(spanned(v, read_rule)?)),
        }
        Ok(())
    })?;
    Ok(r)
}

const SIZE: Shape = Shape { name: "SizeToml", fields: &["min", "max"], required: &[] };

fn read_size(v: &DeValue<'_>) -> Read<SizeToml> {
    let mut s = SizeToml { min: None, max: None };
    structure(v, &SIZE, &mut |k, v| {
        match k {
            0 => s.min = Some(located(v, bytes)?),
            _ => s.max = Some(located(v, bytes)?),
        }
        Ok(())
    })?;
    Ok(s)
}

/// The text being read, to turn byte offsets into lines and columns.
struct Source<'t> {
    text: &'t str,
}

impl Source<'_> {
    /// `error`, prefixed with where `span` starts: `line L, column C: `.
    fn at(&self, span: Range<usize>, error: Error) -> Error {
        let before = &self.text.as_bytes()[..span.start.min(self.text.len())];
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        // Characters, not bytes: count every byte that starts a UTF-8 sequence.
        let column = before[line_start..].iter().filter(|&&b| b & 0xC0 != 0x80).count() + 1;
        Error::new(error.status(), format!("line {line}, column {column}: {}", error.message()))
    }

    fn toml_error(&self, error: &toml::de::Error) -> Error {
        // The reader gives every error a span; should one come without, the
        // error still says where reading began rather than nothing.
        self.at(error.span().unwrap_or(0..0), Error::invalid(error.message().trim_end()))
    }

    fn build(&self, file: &FileToml) -> Result<RegionConfig> {
        let mut config = RegionConfig::new();
        for level in &file.level {
            let l = level.get_ref();
            config
                .add_level(MemoryLevel { name: l.name.clone(), rank: l.rank })
                .map_err(|e| self.at(level.span(), e))?;
        }
        // Where the defaults come from, for the errors they cause: the
        // `defaults` key, or (left out, no region in the file) the start.
        let defaults: Option<Range<usize>> = match &file.defaults {
            Some(key) => key.get_ref().then(|| key.span()),
            None => file.region.is_empty().then_some(0..0),
        };
        let mut used: Vec<u32> = file.region.iter().filter_map(|r| r.get_ref().id).collect();
        if defaults.is_some() {
            used.extend(default_descriptions().iter().map(|d| d.id));
        }
        for region in &file.region {
            let id = match region.get_ref().id {
                Some(id) => id,
                None => {
                    let id = (0..=u32::MAX).find(|id| !used.contains(id)).ok_or_else(|| {
                        self.at(region.span(), Error::overflow("every region id is taken; give this one an id"))
                    })?;
                    used.push(id);
                    id
                }
            };
            let description = self.description(id, region.get_ref())?;
            config.append(description).map_err(|e| self.at(region.span(), e))?;
        }
        if let Some(span) = &defaults {
            for description in default_descriptions() {
                config.append(description).map_err(|e| {
                    self.at(span.clone(), Error::new(e.status(), format!("defaults = true: {}", e.message())))
                })?;
            }
        }
        for (region, description) in file.region.iter().zip(config.descriptions()) {
            let span = region.get_ref().spill.as_ref().map_or(region.span(), Spanned::span);
            config.validate_spill_chain(description).map_err(|e| self.at(span, e))?;
        }
        // The defaults spill nowhere, so the file's regions were the whole
        // check; this keeps it whole should that change.
        config.validate().map_err(|e| self.at(defaults.unwrap_or(0..0), e))?;
        Ok(config)
    }

    fn description(&self, id: u32, r: &RegionToml) -> Result<RegionDescription> {
        let defaults = RegionProperties::default();
        let algorithm = match &r.planner {
            Some(planner) => Algorithm::from_name(planner.get_ref()).map_err(|e| self.at(planner.span(), e))?,
            None => defaults.algorithm,
        };
        // The configuration refuses this too, but would point at the region;
        // spill-target errors point at the `spill` key.
        if let Some(spill) = r.spill.as_ref().filter(|s| !r.name.is_empty() && *s.get_ref() == r.name) {
            return Err(
                self.at(spill.span(), Error::invalid(format!("region '{}' (id {id}) spills to itself", r.name)))
            );
        }
        if let Some(capacity) = r.capacity.as_ref().filter(|c| c.get_ref().0 == 0) {
            return Err(self.at(
                capacity.span(),
                Error::invalid(format!("region '{}': capacity 0 holds nothing; leave it out for no limit", r.name)),
            ));
        }
        let properties = RegionProperties {
            algorithm,
            reuse: r.reuse.unwrap_or(defaults.reuse),
            per_tensor: r.per_tensor.unwrap_or(defaults.per_tensor),
            alignment: r.alignment.map_or(defaults.alignment, |b| b.0),
            base_address: r.base_address.map(|b| b.0),
            capacity: r.capacity.as_ref().map(|c| c.get_ref().0),
            level: r.level.clone().unwrap_or(defaults.level),
            reserved_front: r.reserved_front.map_or(defaults.reserved_front, |b| b.0),
            reserved_back: r.reserved_back.map_or(defaults.reserved_back, |b| b.0),
            spill_to: r.spill.as_ref().map(|s| s.get_ref().clone()),
            mix_constants: r.mix_constants.unwrap_or(defaults.mix_constants),
        };
        Ok(RegionDescription {
            id,
            name: r.name.clone(),
            rule: self.rule(&r.rule)?,
            properties,
            attributes: r.attributes.as_ref().map_or_else(Vec::new, |a| a.0.clone()),
        })
    }

    /// The rule a table says: its keys ANDed in file order, each part
    /// checked where it is written (nested rules locate their own errors).
    fn rule(&self, rule: &Spanned<RuleToml>) -> Result<Rule> {
        let r = rule.get_ref();
        let mut parts: Vec<(Range<usize>, Rule)> = Vec::new();
        let mut add = |span: Range<usize>, made: Result<Rule>| -> Result<()> {
            let rule = made.and_then(|rule| rule.validate().map(|()| rule)).map_err(|e| self.at(span.clone(), e))?;
            parts.push((span, rule));
            Ok(())
        };
        let texts = [
            (&r.name, Rule::Name as fn(String) -> Rule),
            (&r.name_prefix, Rule::NamePrefix),
            (&r.name_glob, Rule::NameGlob),
            (&r.dtype, Rule::Dtype),
            (&r.function, Rule::Function),
        ];
        for (field, make) in texts {
            if let Some(text) = field {
                add(text.span(), Ok(make(text.get_ref().clone())))?;
            }
        }
        // Keys that only take `true`.
        let flags = [
            (
                &r.all_tensors,
                Rule::Any,
                "all_tensors = false matches nothing; write all_tensors = true or leave it out",
            ),
            (&r.view, Rule::IsView, "view = false is not a rule; write not = { view = true }"),
        ];
        for (flag, rule, refusal) in flags {
            if let Some(flag) = flag {
                add(flag.span(), if *flag.get_ref() { Ok(rule) } else { Err(Error::invalid(refusal)) })?;
            }
        }
        if let Some(kind) = &r.kind {
            add(kind.span(), TensorKind::from_name(kind.get_ref()).map(Rule::Kind))?;
        }
        if let Some(tag) = &r.tag {
            let made = match tag.get_ref().split_once('=') {
                Some((key, value)) => Rule::Tag { key: key.trim().to_string(), value: Some(value.trim().to_string()) },
                None => Rule::Tag { key: tag.get_ref().trim().to_string(), value: None },
            };
            add(tag.span(), Ok(made))?;
        }
        if let Some(size) = &r.size {
            let s = size.get_ref();
            let made = match (s.min, s.max) {
                (None, None) => Err(Error::invalid("size = {} bounds nothing; give min, max or both")),
                (min, max) => Ok(Rule::Size { min: min.map_or(0, |b| b.0), max: max.map(|b| b.0) }),
            };
            add(size.span(), made)?;
        }
        for (list, make) in [(&r.and, Rule::And as fn(Vec<Rule>) -> Rule), (&r.or, Rule::Or)] {
            if let Some(list) = list {
                let rules = list.get_ref().iter().map(|rule| self.rule(rule)).collect::<Result<Vec<Rule>>>()?;
                add(list.span(), Ok(make(rules)))?;
            }
        }
        if let Some(not) = &r.not {
            let rule = self.rule(not)?;
            add(not.span(), Ok(rule.negate()))?;
        }
        parts.sort_by_key(|(span, _)| span.start);
        let mut rules: Vec<Rule> = parts.into_iter().map(|(_, rule)| rule).collect();
        match rules.len() {
            0 => {
                Err(self.at(rule.span(), Error::invalid(format!("a rule needs at least one key (keys: {RULE_KEYS})"))))
            }
            1 => Ok(rules.remove(0)),
            _ => Ok(Rule::And(rules)),
        }
    }
}

#[cfg(test)]
mod tests;
