//! The layers of docs/architecture.md, checked: each crate of the workspace builds only with the
//! layers under it (the core and the report without the runtime), no module of a crate depends on
//! itself through others, and no two modules of the actors import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The source without comments (doc comments may name any module) and without its unit tests
/// (the `#[cfg(test)] mod tests` at the end of a file: a test may use any module).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("a source file");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crates of the workspace from the bottom layer up (docs/architecture.md): each may depend
/// only on those before it.
const LAYERS: [&str; 5] = [
    "sage-core",
    "sage-report",
    "sage-ports",
    "sage-actors",
    "sage",
];

/// The runtime: what the pure layers (the core, the report) must not build with.
const RUNTIME: [&str; 9] = [
    "tokio",
    "actix",
    "reqwest",
    "async-nats",
    "hyper",
    "prometheus",
    "opentelemetry",
    "tonic",
    "rustls",
];

/// The crates `package` builds with (its normal dependencies, all the way down), as
/// `cargo tree` lists them.
fn tree(package: &str) -> BTreeSet<String> {
    tree_of(&["-p", package])
}

/// The crates `cargo tree` lists with `args` (normal dependencies, all the way down).
fn tree_of(args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The pure core and the report build without the runtime, and every crate of the workspace
/// builds only with the layers under it: a port imported by the core, or an actor by a port,
/// is then a compile error (the dependency is not there), not a convention.
#[test]
fn each_layer_builds_only_with_the_layers_under_it() {
    for (i, package) in LAYERS.iter().enumerate() {
        let crates = tree(package);
        assert!(crates.contains(*package), "{package}: {crates:?}");
        let above: Vec<&&str> = LAYERS[i + 1..]
            .iter()
            .filter(|l| crates.contains(**l))
            .collect();
        assert!(above.is_empty(), "{package} builds with {above:?}");
        if i < 2 {
            let runtime: Vec<&String> = crates
                .iter()
                .filter(|c| RUNTIME.iter().any(|r| c.starts_with(r)))
                .collect();
            assert!(runtime.is_empty(), "{package} builds with {runtime:?}");
        }
    }
    // The fuzz crate's core targets (no `runtime` feature) build with the core alone.
    let fuzz_core = tree_of(&[
        "--manifest-path",
        "fuzz/Cargo.toml",
        "--no-default-features",
    ]);
    assert!(fuzz_core.contains("sage-core"), "{fuzz_core:?}");
    let above: Vec<&String> = fuzz_core
        .iter()
        .filter(|c| LAYERS[1..].contains(&c.as_str()) || RUNTIME.iter().any(|r| c.starts_with(r)))
        .collect();
    assert!(
        above.is_empty(),
        "the fuzz crate's core targets build with {above:?}"
    );
    // The check sees what is there: the ports build with tokio and the core, the binary with
    // every layer.
    let ports = tree("sage-ports");
    assert!(ports.contains("tokio") && ports.contains("sage-core"));
    assert!(LAYERS.iter().all(|l| tree("sage").contains(*l)));
}

/// The source folder of each crate of the workspace, by crate.
fn crate_sources() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("sage-core", PathBuf::from("crates/core/src")),
        ("sage-report", PathBuf::from("crates/report/src")),
        ("sage-ports", PathBuf::from("crates/ports/src")),
        ("sage-actors", PathBuf::from("crates/actors/src")),
        ("sage", PathBuf::from("src")),
    ]
}

/// The module path of a file in a crate's source folder (`crates/actors/src/desk/roles.rs` ->
/// `desk::roles`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The module paths a file's code names (`crate::a::b::c`, `super::b`, `child::x`), each as
/// written, made absolute (`a::b::c`).
fn named_paths(module: &str, code: &str) -> Vec<String> {
    let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        // A path starting here: identifiers joined by `::`.
        let mut end = i;
        let mut parts = Vec::new();
        loop {
            let start = end;
            while end < bytes.len() && ident(bytes[end]) {
                end += 1;
            }
            parts.push(&code[start..end]);
            if code[end..].starts_with("::") && bytes.get(end + 2).is_some_and(|c| ident(*c)) {
                end += 2;
            } else {
                break;
            }
        }
        i = end.max(i + 1);
        if parts.len() < 2 {
            continue;
        }
        let absolute = match parts[0] {
            "crate" => parts[1..].join("::"),
            "super" if parts[1] == "super" => {
                let grandparent = parent.rsplit_once("::").map_or("", |(p, _)| p);
                under(grandparent, &parts[2..])
            }
            "super" => under(parent, &parts[1..]),
            _ => format!("{module}::{}", parts.join("::")),
        };
        out.push(absolute);
    }
    out
}

/// The path `parts` inside module `parent` (the crate root when empty).
fn under(parent: &str, parts: &[&str]) -> String {
    if parent.is_empty() {
        parts.join("::")
    } else {
        format!("{parent}::{}", parts.join("::"))
    }
}

/// Which other modules each module of `modules` names: each path goes to the longest module it
/// starts with; a module's parents are left out (a module always sees its parents).
fn uses_between(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (module, file) in modules {
        for path in named_paths(module, &code(file)) {
            let target = modules
                .keys()
                .filter(|m| path == **m || path.starts_with(&format!("{m}::")))
                .max_by_key(|m| m.len());
            if let Some(target) = target
                && target != module
                && !module.starts_with(&format!("{target}::"))
            {
                uses.entry(module).or_default().insert(target);
            }
        }
    }
    uses
}

/// The groups of nodes of `edges` that reach each other (strongly connected, more than one).
fn cycles<'a>(edges: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<Vec<&'a str>> {
    let graph: petgraph::graphmap::DiGraphMap<&str, ()> =
        petgraph::graphmap::DiGraphMap::from_edges(edges);
    let mut found: Vec<Vec<&str>> = petgraph::algo::tarjan_scc(&graph)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|mut group| {
            group.sort();
            group
        })
        .collect();
    found.sort();
    found
}

/// The modules of a crate's source folder (each file one), by module path.
fn modules_of(src: &Path) -> BTreeMap<String, PathBuf> {
    sources(src)
        .into_iter()
        .map(|f| (module_of(src, &f), f))
        .filter(|(m, _)| m != "lib" && m != "main")
        .collect()
}

/// No module depends on itself through others: in no crate do the files (each a module) or the
/// top-level modules (protocol, plan, store, ...) form a cycle of any length, computed from the
/// paths the sources name (docs/architecture.md: the layers and the pure core's order). Between
/// crates, Cargo refuses a cycle.
#[test]
fn no_module_depends_on_itself_through_others() {
    let mut tops = BTreeSet::new();
    for (package, src) in crate_sources() {
        for (a, b) in module_cycle_check(&modules_of(&src)) {
            tops.insert(format!("{package}: {a} -> {b}"));
        }
    }
    // The check sees what is there: the core's protocol uses the scenarios, the ports' store the
    // models, and a cycle made on purpose is found.
    assert!(
        tops.contains("sage-core: protocol -> scenario"),
        "{tops:#?}"
    );
    assert!(tops.contains("sage-ports: store -> llm"), "{tops:#?}");
    assert_eq!(
        cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]),
        vec![vec!["a", "b", "c"]]
    );
}

/// Asserts that neither the modules nor the top-level modules of one crate form a cycle; gives
/// the edges between top-level modules.
fn module_cycle_check(modules: &BTreeMap<String, PathBuf>) -> BTreeSet<(String, String)> {
    let uses = uses_between(modules);
    let edges = || {
        uses.iter()
            .flat_map(|(a, bs)| bs.iter().map(move |b| (*a, *b)))
    };
    assert_eq!(
        cycles(edges()),
        Vec::<Vec<&str>>::new(),
        "modules in a cycle"
    );
    let tops: BTreeSet<(&str, &str)> = edges()
        .map(|(a, b)| {
            (
                a.split("::").next().unwrap_or(a),
                b.split("::").next().unwrap_or(b),
            )
        })
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        cycles(tops.iter().copied()),
        Vec::<Vec<&str>>::new(),
        "top-level modules in a cycle"
    );
    tops.into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn no_two_actor_modules_import_each_other() {
    let modules = modules_of(Path::new("crates/actors/src"));
    let uses = uses_between(&modules);
    let cycles: Vec<(&str, &str)> = uses
        .iter()
        .flat_map(|(a, bs)| bs.iter().map(move |b| (*a, *b)))
        .filter(|(a, b)| a < b && uses.get(b).is_some_and(|s| s.contains(a)))
        .collect();
    assert!(
        cycles.is_empty(),
        "modules importing each other: {cycles:?}"
    );
    // The check sees imports at all: the desk's roles use the SAGE roles.
    assert!(
        uses.get("desk::roles").is_some_and(|s| s.contains("roles")),
        "{uses:#?}"
    );
}

/// The suite lifecycle is one mechanism: the files that carry every suite (the trait, the
/// lifecycle, the model call, the CLI's wiring) name none of them, so a suite is added in its
/// own folders without a branch here (issue 36). Only code is read (doc comments may name one).
#[test]
fn the_shared_suite_lifecycle_names_no_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = [
        "crates/core/src/suite.rs",
        "crates/core/src/protocol/call.rs",
        "crates/actors/src/suite.rs",
        "crates/actors/src/call.rs",
        "crates/actors/src/cluster/hosted.rs",
        "crates/ports/src/store/suite.rs",
        "src/cli/suite.rs",
    ];
    let suites = [
        "tau2",
        "Tau2",
        "desk",
        "Desk",
        "Sop",
        "sop::",
        "DialogueRecord",
    ];
    for file in shared {
        let code = code(&root.join(file));
        for name in suites {
            assert!(
                !code.contains(name),
                "{file} names the suite-specific `{name}`: a suite's code belongs in its own folder"
            );
        }
    }
    // The distributed mode's processes and the commands reach a suite on the one lifecycle
    // through it, by its name: no branch of theirs names one (the suites are listed in
    // crates/actors/src/cluster/suites.rs and in the CLI's `Suite::hosted`). The worker's
    // tripwire still forwards the desk's own transport requests (the `Transport` port's).
    let processes = [
        "crates/actors/src/cluster/mod.rs",
        "crates/actors/src/cluster/worker.rs",
        "crates/actors/src/cluster/collector.rs",
        "crates/actors/src/cluster/submit.rs",
        "src/cli/cluster.rs",
        "src/cli/report.rs",
    ];
    for file in processes {
        let code = code(&root.join(file));
        for name in [
            "tau2",
            "Tau2",
            "SupportDesk",
            "DeskRecord",
            "DeskConfig",
            "DeskJob",
            "DeskFold",
            "DeskManifest",
            "DeskActor",
            "is_desk",
            "desk.jsonl",
        ] {
            assert!(
                !code.contains(name),
                "{file} names the suite-specific `{name}`: a suite on the one lifecycle is reached through it"
            );
        }
    }
}
