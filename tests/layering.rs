//! The layers of docs/architecture.md, checked on the sources: the pure core imports no port, no
//! actor and no runtime; the ports import no actor; no two modules of the actors import each
//! other.

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

/// The files of `layer` that name any of `forbidden` (`crate::llm`, `tokio`, ...).
fn violations(layers: &[&str], forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for layer in layers {
        for file in sources(&Path::new("src").join(layer)) {
            let code = code(&file);
            for f in forbidden {
                let named = code.match_indices(f).any(|(i, _)| {
                    let after = code[i + f.len()..].chars().next();
                    !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if named {
                    found.push(format!("{} uses {f}", file.display()));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_imports_no_port_no_actor_and_no_runtime() {
    let core = [
        "scenario", "sop", "protocol", "scoring", "prompts", "plan", "report",
    ];
    let forbidden = [
        "crate::llm",
        "crate::store",
        "crate::transport",
        "crate::telemetry",
        "crate::actors",
        "crate::cli",
        "tokio",
        "actix",
        "reqwest",
        "async_nats",
        "prometheus",
    ];
    let found = violations(&core, &forbidden);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_ports_import_no_actor_and_no_command_line() {
    let found = violations(
        &["llm", "store", "transport", "telemetry"],
        &["crate::actors", "crate::cli"],
    );
    // The transport reaches the actors it carries requests to: only its in-process side may.
    let found: Vec<String> = found
        .into_iter()
        .filter(|f| !f.starts_with("src/transport/local.rs"))
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

/// The module path of an actors file (`src/actors/desk/roles.rs` -> `actors::desk::roles`).
fn module_of(file: &Path) -> String {
    let rel = file
        .strip_prefix("src")
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
                format!("{grandparent}::{}", parts[2..].join("::"))
            }
            "super" => format!("{parent}::{}", parts[1..].join("::")),
            _ => format!("{module}::{}", parts.join("::")),
        };
        out.push(absolute);
    }
    out
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

/// No module depends on itself through others: neither the files of src (each a module) nor the
/// top-level modules (protocol, plan, store, ...) form a cycle of any length, computed from the
/// paths the sources name (docs/architecture.md: the layers and the pure core's order).
#[test]
fn no_module_depends_on_itself_through_others() {
    let modules: BTreeMap<String, PathBuf> = sources(Path::new("src"))
        .into_iter()
        .map(|f| (module_of(&f), f))
        .filter(|(m, _)| m != "lib" && m != "main")
        .collect();
    let uses = uses_between(&modules);
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
    // The check sees what is there: the command line uses the actors, the core's protocol the
    // scenarios, and a cycle made on purpose is found.
    assert!(tops.contains(&("cli", "actors")) && tops.contains(&("protocol", "scenario")));
    assert_eq!(
        cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]),
        vec![vec!["a", "b", "c"]]
    );
}

#[test]
fn no_two_actor_modules_import_each_other() {
    let files = sources(Path::new("src/actors"));
    let modules: BTreeMap<String, PathBuf> =
        files.iter().map(|f| (module_of(f), f.clone())).collect();
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
        uses.get("actors::desk::roles")
            .is_some_and(|s| s.contains("actors::roles")),
        "{uses:#?}"
    );
}
