use super::*;
use crate::region::defaults::DEFAULT_REGION_NAMES;
use crate::region::tensor::Tensor;

const EXAMPLE: &str = include_str!("../../../examples/regions.toml");

fn level(name: &str, rank: u32) -> MemoryLevel {
    MemoryLevel { name: name.to_string(), rank }
}

fn names(config: &RegionConfig) -> Vec<&str> {
    config.descriptions().iter().map(|d| d.name.as_str()).collect()
}

fn ids(config: &RegionConfig) -> Vec<u32> {
    config.descriptions().iter().map(|d| d.id).collect()
}

/// The error `text` gives: its status, and its message, which must start
/// with `line L, column C: ` and contain `fragment`.
#[track_caller]
fn fails_at(text: &str, line: usize, column: usize, status: Status, fragment: &str) {
    let e = RegionConfig::from_toml_str(text).unwrap_err();
    let prefix = format!("line {line}, column {column}: ");
    assert!(e.message().starts_with(&prefix), "want '{prefix}...', got '{}'\nfor:\n{text}", e.message());
    assert!(e.message().contains(fragment), "want '{fragment}' in '{}'\nfor:\n{text}", e.message());
    assert_eq!(e.status(), status, "{}", e.message());
}

const ANY: &str = "rule = { all_tensors = true }\n";

#[test]
fn every_region_key_reads_into_its_field() {
    let text = r#"
defaults = false
[[level]]
name = "sram"
rank = 0
[[level]]
name = "ddr"
rank = 1

[[region]]
name = "fast"
id = 7
level = "sram"
planner = "floor-first"
reuse = false
per_tensor = true
alignment = "128 B"
base_address = 0x2000_0000
capacity = "1 MiB"
reserved_front = 16
reserved_back = "1 KB"
spill = "slow"
mix_constants = true
rule = { kind = "input" }
[region.attributes]
zeta = "1"
alpha = "two"

[[region]]
name = "slow"
level = "ddr"
rule = { all_tensors = true }
"#;
    let c = RegionConfig::from_toml_str(text).unwrap();
    assert_eq!(c.levels(), [level("sram", 0), level("ddr", 1)]);
    let fast = RegionDescription {
        id: 7,
        name: "fast".into(),
        rule: Rule::Kind(TensorKind::Input),
        properties: RegionProperties {
            algorithm: Algorithm::FloorFirst,
            reuse: false,
            per_tensor: true,
            alignment: 128,
            base_address: Some(0x2000_0000),
            capacity: Some(1 << 20),
            level: "sram".into(),
            reserved_front: 16,
            reserved_back: 1000,
            spill_to: Some("slow".into()),
            mix_constants: true,
        },
        // In file order, not sorted.
        attributes: vec![("zeta".into(), "1".into()), ("alpha".into(), "two".into())],
    };
    // Left out, every property is the default; the id is the smallest free.
    let slow = RegionDescription::new(0, "slow", Rule::Any)
        .with_properties(RegionProperties { level: "ddr".into(), ..RegionProperties::default() });
    assert_eq!(c.descriptions(), [fast, slow]);
}

#[test]
fn every_rule_key_reads_into_its_rule_in_file_order() {
    let text = r#"
[[region]]
name = "r"
rule = { name = "a", name_prefix = "b", name_glob = "c*", dtype = "i8", function = "f", tag = "op = fc", size = { min = "1 KiB" }, kind = "view", view = true }
[[region]]
name = "s"
rule = { or = [{ tag = "bank" }, { not = { size = { max = 64 } } }, { and = [{ all_tensors = true }] }] }
[[region]]
name = "t"
rule = { view = true, all_tensors = true, tag = "k=" }
"#;
    let c = RegionConfig::from_toml_str(text).unwrap();
    let s = |x: &str| x.to_string();
    assert_eq!(
        c.descriptions()[0].rule,
        Rule::And(vec![
            Rule::Name(s("a")),
            Rule::NamePrefix(s("b")),
            Rule::NameGlob(s("c*")),
            Rule::Dtype(s("i8")),
            Rule::Function(s("f")),
            Rule::Tag { key: s("op"), value: Some(s("fc")) },
            Rule::Size { min: 1024, max: None },
            Rule::Kind(TensorKind::View),
            Rule::IsView,
        ])
    );
    assert_eq!(
        c.descriptions()[1].rule,
        Rule::Or(vec![
            Rule::Tag { key: s("bank"), value: None },
            Rule::Not(Box::new(Rule::Size { min: 0, max: Some(64) })),
            Rule::And(vec![Rule::Any]),
        ])
    );
    assert_eq!(
        c.descriptions()[2].rule,
        Rule::And(vec![Rule::IsView, Rule::Any, Rule::Tag { key: s("k"), value: Some(String::new()) }])
    );
    // What a rule says is what it matches.
    let t = Tensor::new("cat", TensorKind::Constant, 8).with_tag("bank", "1");
    assert_eq!(c.first_match(&t), Some(1));
}

#[test]
fn byte_counts_take_integers_hex_and_units() {
    for (text, want) in [
        ("64", 64),
        (" 7 ", 7),
        ("0x40", 64),
        ("0X4_0 B", 64),
        ("1_024 B", 1024),
        ("2KiB", 2048),
        ("3 MiB", 3 << 20),
        ("1 GiB", 1 << 30),
        ("5 KB", 5000),
        ("2 MB", 2_000_000),
        ("1 GB", 1_000_000_000),
        ("0xFFFF_0000_0000_0000", 0xFFFF_0000_0000_0000),
        ("16 GiB", 16 << 30),
    ] {
        assert_eq!(parse_bytes(text), Ok(want), "{text}");
    }
    for (text, fragment) in [
        ("KiB", "does not start with a number"),
        ("", "does not start with a number"),
        ("0x", "does not start with a number"),
        ("-5", "does not start with a number"),
        ("5 XB", "unknown unit 'XB'"),
        ("5 kib", "unknown unit 'kib'"),
        ("1.5 KiB", "unknown unit '.5 KiB'"),
        ("5 KiB B", "unknown unit 'KiB B'"),
        ("18446744073709551616", "overflows 64 bits"),
        ("17179869184 GiB", "overflows 64 bits"),
    ] {
        let e = parse_bytes(text).unwrap_err();
        assert!(e.contains(fragment), "{text}: {e}");
    }
    // Past the largest TOML integer, as a string.
    let c = RegionConfig::from_toml_str(&format!(
        "[[region]]\nname = \"a\"\nbase_address = \"0xFFFF_0000_0000_0000\"\n{ANY}"
    ))
    .unwrap();
    assert_eq!(c.descriptions()[0].properties.base_address, Some(0xFFFF_0000_0000_0000));
}

#[test]
fn syntax_and_type_errors_say_line_and_column() {
    let invalid = Status::InvalidArgument;
    fails_at("[[region]\nname = \"a\"\n", 1, 10, invalid, "unclosed array table");
    fails_at("[[region]]\nname = \"a\"\nname = \"b\"\n", 3, 1, invalid, "duplicate key");
    fails_at("levels = 1\n", 1, 1, invalid, "unknown field `levels`");
    fails_at("defaults = 1\n", 1, 12, invalid, "invalid type: integer `1`, expected a boolean");
    fails_at(&format!("[[region]]\nname = \"a\"\n{ANY}size = 3\n"), 4, 1, invalid, "unknown field `size`");
    fails_at("[[region]]\nname = \"a\"\nrule = { knd = \"constant\" }\n", 3, 10, invalid, "unknown field `knd`");
    fails_at("[[region]]\nname = \"a\"\nrule = { size = { least = 1 } }\n", 3, 19, invalid, "unknown field `least`");
    fails_at("\n[[region]]\nname = \"a\"\n", 2, 1, invalid, "missing field `rule`");
    fails_at(&format!("[[region]]\n{ANY}"), 1, 1, invalid, "missing field `name`");
    fails_at(&format!("[[region]]\nname = 5\n{ANY}"), 2, 8, invalid, "expected a string");
    fails_at(&format!("[[region]]\nname = \"a\"\nid = -1\n{ANY}"), 3, 6, invalid, "expected u32");
    fails_at(&format!("[[region]]\nname = \"a\"\nreuse = \"no\"\n{ANY}"), 3, 9, invalid, "expected a boolean");
    fails_at("[[level]]\nname = \"sram\"\nrank = -1\n", 3, 8, invalid, "expected u32");
    fails_at("[[level]]\nname = \"sram\"\n", 1, 1, invalid, "missing field `rank`");
    fails_at(
        &format!("[[region]]\nname = \"a\"\n{ANY}[region.attributes]\nbank = 0\n"),
        5,
        8,
        invalid,
        "expected a string",
    );
    fails_at("[[region]]\nname = \"a\"\nrule = \"constant\"\n", 3, 8, invalid, "invalid type: string");
    fails_at(
        "[[region]]\nname = \"a\"\nrule = { and = { kind = \"input\" } }\n",
        3,
        16,
        invalid,
        "expected a sequence",
    );
    // Nesting is bounded by the reader, not by the stack.
    let deep =
        format!("[[region]]\nname = \"a\"\nrule = {}{{ view = true }}{}\n", "{ not = ".repeat(1000), " }".repeat(1000));
    fails_at(&deep, 3, 648, invalid, "max recursion depth met");
}

#[test]
fn byte_count_errors_say_line_and_column() {
    let invalid = Status::InvalidArgument;
    let region = |line: &str| format!("[[region]]\nname = \"a\"\n{line}\n{ANY}");
    fails_at(
        &region("capacity = \"5 XB\""),
        3,
        12,
        invalid,
        "unknown unit 'XB' in '5 XB' (known: B, KiB, MiB, GiB, KB,",
    );
    fails_at(&region("reserved_front = -1"), 3, 18, invalid, "negative byte count -1");
    fails_at(&region("alignment = 1.5"), 3, 13, invalid, "invalid type: floating point `1.5`, expected a byte count");
    fails_at(&region("reserved_back = \"20000000000 GiB\""), 3, 17, invalid, "'20000000000 GiB' overflows 64 bits");
    fails_at(&region("capacity = 0"), 3, 12, invalid, "capacity 0 holds nothing");
    fails_at(&region("base_address = true"), 3, 16, invalid, "expected a byte count");
    fails_at("[[region]]\nname = \"a\"\nrule = { size = { min = -4 } }\n", 3, 25, invalid, "negative byte count -4");
}

#[test]
fn meaning_errors_in_rules_say_line_and_column() {
    let invalid = Status::InvalidArgument;
    let rule = |rule: &str| format!("[[region]]\nname = \"a\"\nrule = {rule}\n");
    fails_at(
        &rule("{ kind = \"weights\" }"),
        3,
        17,
        invalid,
        "unknown tensor kind 'weights' (known: constant, mutable, input, output, input-output, activation, view)",
    );
    fails_at(&rule("{}"), 3, 8, invalid, "a rule needs at least one key (keys: all_tensors, kind,");
    fails_at(&rule("{ and = [] }"), 3, 16, invalid, "an AND needs at least one rule");
    fails_at(&rule("{ not = { or = [] } }"), 3, 23, invalid, "an OR needs at least one rule");
    fails_at(&rule("{ or = [{ kind = \"input\" }, {}] }"), 3, 36, invalid, "a rule needs at least one key");
    fails_at(&rule("{ all_tensors = false }"), 3, 24, invalid, "all_tensors = false matches nothing");
    fails_at(&rule("{ view = false }"), 3, 17, invalid, "write not = { view = true }");
    fails_at(&rule("{ size = {} }"), 3, 17, invalid, "give min, max or both");
    fails_at(&rule("{ size = { min = 8, max = 4 } }"), 3, 17, invalid, "size range is reversed (8 B > 4 B)");
    fails_at(&rule("{ name = \"\" }"), 3, 17, invalid, "empty name");
    fails_at(&rule("{ name_glob = \"\" }"), 3, 22, invalid, "empty name glob");
    fails_at(&rule("{ tag = \"=x\" }"), 3, 16, invalid, "empty tag key");
    // Columns count characters, not bytes: 'é' is two bytes, one column.
    fails_at(&rule("{ name = \"é\", kind = \"x\" }"), 3, 29, invalid, "unknown tensor kind 'x'");
}

#[test]
fn meaning_errors_in_regions_say_line_and_column() {
    let region = |name: &str, extra: &str| format!("[[region]]\nname = \"{name}\"\n{extra}{ANY}");
    fails_at(
        &format!("{}{}", region("a", "planner = \"fastest\"\n"), ""),
        3,
        11,
        Status::InvalidArgument,
        "unknown algorithm 'fastest' (known: auto, tflm,",
    );
    // What the configuration refuses, at the region (or level) it is about.
    fails_at(
        &format!("{}\n{}", region("a", ""), region("a", "")),
        5,
        1,
        Status::AlreadyExists,
        "region 'a' (id 1): a region of that name already exists",
    );
    fails_at(
        &format!("{}{}", region("a", "id = 3\n"), region("b", "id = 3\n")),
        5,
        1,
        Status::AlreadyExists,
        "region 'b' (id 3): id 3 is already used by region 'a'",
    );
    fails_at(&region("a", "level = \"hbm\"\n"), 1, 1, Status::NotFound, "unknown memory level 'hbm' (known: memory)");
    fails_at(&region("a", "alignment = 48\n"), 1, 1, Status::InvalidArgument, "power of two");
    fails_at(
        &region("a", "alignment = 64\nbase_address = 0x100_0020\n"),
        1,
        1,
        Status::InvalidArgument,
        "base address",
    );
    fails_at(&region("a", "capacity = 64\nreserved_back = 65\n"), 1, 1, Status::InvalidArgument, "exceed its capacity");
    fails_at(&region("", ""), 1, 1, Status::InvalidArgument, "empty name");
    // A spill to itself: at the `spill` key's value, like every spill
    // target error below (line 3, not the region's line 1).
    fails_at(&region("a", "spill = \"a\"\n"), 3, 9, Status::InvalidArgument, "region 'a' (id 0) spills to itself");
    fails_at(
        &format!("{}\n{}", region("x", ""), region("b", "reuse = true\nspill = \"b\"\n")),
        8,
        9,
        Status::InvalidArgument,
        "region 'b' (id 1) spills to itself",
    );
    fails_at(
        "[[level]]\nname = \"sram\"\nrank = 0\n[[level]]\nname = \"sram\"\nrank = 1\n",
        4,
        1,
        Status::AlreadyExists,
        "memory level 'sram' is defined twice",
    );
    // Spill targets: at the `spill` of the region whose chain is wrong.
    fails_at(
        &format!("{}{}", region("a", ""), region("b", "spill = \"ddr\"\n")),
        6,
        9,
        Status::NotFound,
        "region 'b' spills to 'ddr', which is not a region",
    );
    fails_at(
        &format!("{}{}", region("a", "spill = \"b\"\n"), region("b", "spill = \"a\"\n")),
        3,
        9,
        Status::InvalidArgument,
        "spill targets form a cycle: a -> b -> a",
    );
    fails_at(
        &format!("{}{}", region("a", "spill = \"b\"\n"), region("b", "per_tensor = true\n")),
        3,
        9,
        Status::InvalidArgument,
        "'b', a per-tensor region",
    );
    // A clash with the defaults: at `defaults`.
    fails_at(
        &format!("defaults = true\n{}", region("activations", "id = 9\n")),
        1,
        12,
        Status::AlreadyExists,
        "defaults = true: region 'activations' (id 4): a region of that name already exists",
    );
    fails_at(
        &format!("defaults = true\n{}", region("mine", "id = 2\n")),
        1,
        12,
        Status::AlreadyExists,
        "defaults = true: region 'mutable-input-weights' (id 2): id 2 is already used by region 'mine'",
    );
}

#[test]
fn defaults_come_after_the_file_and_ids_default_to_the_smallest_free() {
    let region = |name: &str, extra: &str| format!("[[region]]\nname = \"{name}\"\n{extra}{ANY}");
    let three = format!("{}{}{}", region("a", ""), region("b", "id = 6\n"), region("c", ""));
    let c = RegionConfig::from_toml_str(&format!("defaults = true\n{three}")).unwrap();
    let mut want = vec!["a", "b", "c"];
    want.extend(DEFAULT_REGION_NAMES);
    assert_eq!(names(&c), want);
    assert_eq!(ids(&c), [5, 6, 7, 0, 1, 2, 3, 4]);
    assert_eq!(c.descriptions()[3..], default_descriptions()[..]);
    // The file's regions match first: here `a` takes every tensor.
    assert_eq!(c.first_match(&Tensor::new("w", TensorKind::Constant, 4)), Some(0));

    let three = format!("{}{}{}", region("a", ""), region("b", "id = 0\n"), region("c", ""));
    for text in [three.clone(), format!("defaults = false\n{three}")] {
        let c = RegionConfig::from_toml_str(&text).unwrap();
        assert_eq!(names(&c), ["a", "b", "c"]);
        assert_eq!(ids(&c), [1, 0, 2]);
    }

    let only = RegionConfig::from_toml_str("defaults = true\n").unwrap();
    assert_eq!(only, RegionConfig::glow_defaults());
}

/// Glow's rule: "If no user-defined memory regions definitions are provided
/// by the user, default memory regions definitions are used"; unless the
/// file says `defaults = false`.
#[test]
fn a_file_without_regions_gets_the_defaults_unless_it_says_defaults_false() {
    for text in ["", "# nothing\n", "\n\n"] {
        assert_eq!(RegionConfig::from_toml_str(text).unwrap(), RegionConfig::glow_defaults(), "{text:?}");
    }
    let levels = "[[level]]\nname = \"sram\"\nrank = 0\n[[level]]\nname = \"memory\"\nrank = 1\n";
    let c = RegionConfig::from_toml_str(levels).unwrap();
    assert_eq!(c.levels(), [level("sram", 0), level("memory", 1)]);
    assert_eq!(c.descriptions(), default_descriptions());
    // A model builds under it: constants and activations in their defaults.
    let mut model = crate::region::Model::new();
    model.add(Tensor::new("w", TensorKind::Constant, 100)).unwrap();
    let lifetime = crate::plan::Lifetime::half_open(0, 2).unwrap();
    model.add(Tensor::activation("x", 64, lifetime)).unwrap();
    let table = crate::region::RegionTable::build(&model, &c).unwrap();
    let region = |id: usize| table.regions[table.placements[id].region].name.as_str();
    assert_eq!((region(0), region(1)), ("constant-weights", "activations"));
    assert!(table.regions.iter().all(|r| r.level == "memory"));

    // `defaults = false`: nothing is added, and a build says no region takes
    // the tensors.
    for text in ["defaults = false\n".to_string(), format!("defaults = false\n{levels}")] {
        let c = RegionConfig::from_toml_str(&text).unwrap();
        assert!(c.descriptions().is_empty(), "{text}");
        let e = crate::region::RegionTable::build(&model, &c).unwrap_err();
        assert!(e.message().contains("tried: no regions"), "{}", e.message());
    }
}

#[test]
fn the_example_file_reads_as_written() {
    let c = RegionConfig::from_toml_str(EXAMPLE).unwrap();
    assert_eq!(c.levels(), [level("sram", 0), level("memory", 1)]);
    let mut want = vec!["fc-weights", "ddr-weights"];
    want.extend(DEFAULT_REGION_NAMES);
    assert_eq!(names(&c), want);
    assert_eq!(ids(&c), [10, 5, 0, 1, 2, 3, 4]);
    let fc = &c.descriptions()[0];
    assert_eq!(fc.rule, Rule::Kind(TensorKind::Constant).and(Rule::Tag { key: "op".into(), value: Some("fc".into()) }));
    assert_eq!(
        fc.properties,
        RegionProperties {
            algorithm: Algorithm::Sequential,
            reuse: false,
            per_tensor: false,
            alignment: 64,
            base_address: Some(0x2000_0000),
            capacity: Some(8 << 10),
            level: "sram".into(),
            reserved_front: 0,
            reserved_back: 256,
            spill_to: Some("ddr-weights".into()),
            mix_constants: false,
        }
    );
    assert_eq!(fc.attributes, [("bank".to_string(), "0".to_string()), ("dma".to_string(), "burst-64".to_string())]);
    let ddr = &c.descriptions()[1];
    assert_eq!(ddr.rule, Rule::Any.negate());
    assert_eq!(
        ddr.properties,
        RegionProperties {
            algorithm: Algorithm::Sequential,
            reuse: false,
            level: "memory".into(),
            ..RegionProperties::default()
        }
    );
    // fc constants to SRAM, other constants to the defaults, nothing to DDR
    // by itself.
    let fc1 = Tensor::new("fc1.weight", TensorKind::Constant, 131_072).with_tag("op", "fc");
    let conv1 = Tensor::new("conv1.weight", TensorKind::Constant, 432).with_tag("op", "conv");
    assert_eq!(c.first_match(&fc1), Some(0));
    assert_eq!(c.first_match(&conv1), Some(2));

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/regions.toml");
    assert_eq!(RegionConfig::from_toml_path(&path).unwrap(), c);
}

#[test]
fn file_errors_name_the_path() {
    let missing = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/no-such-regions.toml");
    let e = RegionConfig::from_toml_path(&missing).unwrap_err();
    assert_eq!(e.status(), Status::NotFound);
    assert!(e.message().starts_with(&format!("{}: cannot read", missing.display())), "{}", e.message());

    let path = std::env::temp_dir().join(format!("nnmem-config-file-test-{}.toml", std::process::id()));
    std::fs::write(&path, "defaults = true\n[[region]]\nname = \"a\"\nrule = { kind = \"weights\" }\n").unwrap();
    let e = RegionConfig::from_toml_path(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(e.status(), Status::InvalidArgument);
    let want = format!("{}: line 4, column 17: unknown tensor kind 'weights'", path.display());
    assert!(e.message().starts_with(&want), "{}", e.message());
}

/// The reader walks the parsed document by hand; these are the serde
/// derive's answers it keeps for values of unusual types.
#[test]
fn unusual_values_keep_the_derives_messages() {
    let invalid = Status::InvalidArgument;
    let region = |line: &str| format!("[[region]]\nname = \"a\"\n{ANY}{line}\n");
    fails_at(&region("id = 4294967296"), 4, 6, invalid, "invalid value: integer `4294967296`, expected u32");
    fails_at(
        &region("id = 18446744073709551616"),
        4,
        6,
        invalid,
        "invalid type: integer `18446744073709551616` as i128, expected u32",
    );
    fails_at(&region("alignment = 2.0"), 4, 13, invalid, "invalid type: floating point `2.0`, expected a byte count");
    fails_at(&region("reuse = 1979-05-27"), 4, 9, invalid, "invalid type: map, expected a boolean");
    fails_at(&region("attributes = 1979-05-27"), 4, 14, invalid, "invalid type: string \"$__toml_private_datetime\"");
    fails_at(
        "[[region]]\nname = \"a\"\nrule = 1979-05-27\n",
        3,
        8,
        invalid,
        "unknown field `$__toml_private_datetime`, expected one of `all_tensors`",
    );
    // An array stands for a structure's fields in declaration order.
    fails_at(
        "[[region]]\nname = \"a\"\nrule = { size = [1] }\n",
        3,
        17,
        invalid,
        "invalid length 1, expected struct SizeToml with 2 elements",
    );
    fails_at("level = [[\"a\"]]\n", 1, 10, invalid, "invalid length 1, expected struct LevelToml with 2 elements");
    let c = RegionConfig::from_toml_str("defaults = false\nlevel = [[\"sram\", 3]]\n").unwrap();
    assert!(c.levels().iter().any(|l| l.name == "sram" && l.rank == 3));
    // Attributes come back in file order, not the reader's key order.
    let c = RegionConfig::from_toml_str(&format!("{}[region.attributes]\nz = \"1\"\na = \"2\"\n", region(""))).unwrap();
    let attributes: Vec<(&str, &str)> =
        c.descriptions()[0].attributes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(attributes, [("z", "1"), ("a", "2")]);
}
