//! The loader never panics, whatever it is given: arbitrary bytes, arbitrary text, and valid
//! scenarios with random edits (which reach deep into validation and the graph checks).

use proptest::prelude::*;
use std::path::Path;

fn bundled() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

fn load(text: &str) {
    // Either outcome is fine; a panic fails the test.
    let _ = sage::sop::from_yaml(text, "fuzz.yaml");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        load(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_yaml_like_text(text in "[a-z0-9:{}\\[\\], \\n\\-\"'|>&*!#.=<]{0,300}") {
        load(&text);
    }

    /// Random line-level edits of a bundled scenario: delete, duplicate or swap lines, replace a
    /// token. Many results are still valid YAML and exercise the semantic checks.
    #[test]
    fn edited_scenarios(which in 0usize..6, edits in proptest::collection::vec((0u8..5, any::<usize>(), any::<usize>()), 1..6)) {
        let files = bundled();
        let mut lines: Vec<String> = files[which % files.len()].lines().map(str::to_string).collect();
        let tokens = ["step2", "step9", "Calm", "true", "\"== 0\"", "{action: Nope}", "[]", "otherwise", "next: step1", ""];
        for (op, a, b) in edits {
            if lines.is_empty() {
                break;
            }
            let (i, j) = (a % lines.len(), b % lines.len());
            match op {
                0 => { lines.remove(i); }
                1 => { let l = lines[i].clone(); lines.insert(j, l); }
                2 => lines.swap(i, j),
                3 => {
                    let words: Vec<&str> = lines[i].split(' ').collect();
                    let k = b % words.len();
                    let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
                    w[k] = tokens[a % tokens.len()].to_string();
                    lines[i] = w.join(" ");
                }
                _ => { let cut = lines[i].floor_char_boundary(b % (lines[i].len() + 1)); lines[i].truncate(cut); }
            }
        }
        load(&lines.join("\n"));
    }
}

#[test]
fn pathological_inputs() {
    // Alias expansion bombs, deep nesting, huge integers, empty documents.
    let bomb = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n";
    load(bomb);
    load(&"[".repeat(10_000));
    load(&"a:\n".repeat(2_000));
    load("");
    load("---\n---\n");
    load(
        "id: x\nname: y\ndomain: z\ndescription: w\nfields:\n  P: {description: d, type: integer, min: 99999999999999999999}\n",
    );
}
