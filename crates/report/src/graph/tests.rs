use super::*;

const LOOPY: &str = r#"
id: loopy
name: Loopy
domain: test
description: a loop that no assignment follows
fields:
  A:
    description: a
    options: [x, y]
actions:
  Done: done
  A_Very_Long_Action_Name_That_Must_Wrap_Over_Lines: long
sop:
  start: s1
  stages:
    s1:
      title: First
      branch_on: A
      cases:
        x: s2
        y: {action: Done}
    s2:
      title: Second stage with a title long enough to wrap onto two lines
      branch_on: A
      cases:
        x: {action: A_Very_Long_Action_Name_That_Must_Wrap_Over_Lines}
        y: s1
user:
  intents:
    - id: i
      description: i
      adversarial: zero
      implies: {A: x}
      facts: [f]
  personas:
    - id: p
      traits: [t]
      communication_style: s
      cooperativeness: high
"#;

fn loopy() -> Sop {
    match sage_core::sop::from_yaml(LOOPY, "loopy.yaml") {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn text_is_measured_from_the_font_tables_and_wrapped_at_breaks() {
    // "Wi" at 10 px: W 989 + i 278 thousandths of an em (regular); bold W 1103 + i 343.
    assert!((text_width("Wi", 10.0, false) - 12.67).abs() < 1e-9);
    assert!((text_width("Wi", 10.0, true) - 14.46).abs() < 1e-9);
    assert_eq!(text_width("é", 10.0, false), 10.0);
    assert_eq!(wrap("", 100.0, 11.0, false), vec![String::new()]);
    assert_eq!(wrap("short", 100.0, 11.0, false), vec!["short"]);
    // camelCase and `+` break a name; each line fits.
    let lines = wrap("RescheduleOrRefund+HandlingFee", 80.0, 11.0, true);
    assert_eq!(lines, vec!["Reschedule", "OrRefund+", "HandlingFee"]);
    // A condition breaks after its `=` before its value is cut.
    assert_eq!(
        wrap("IsInfoComplete=Incomplete", 100.0, 10.0, false),
        vec!["IsInfoComplete=", "Incomplete"]
    );
    // A clause per line before a word is cut.
    assert_eq!(
        wrap("RescheduleOrRefund, Complaint", 120.0, 10.0, false),
        vec!["RescheduleOrRefund,", "Complaint"]
    );
    assert!(lines.iter().all(|l| text_width(l, 11.0, true) <= 80.0));
    assert_eq!(
        wrap(
            "CoreDemand=Complaint|Inqury, memberLevel=Regular",
            180.0,
            10.0,
            false
        ),
        vec!["CoreDemand=Complaint|Inqury,", "memberLevel=Regular"]
    );
    // Nothing to break at: cut between characters, never wider than the line.
    let cut = wrap(&"x".repeat(60), 100.0, 10.0, false);
    assert!(cut.len() > 1 && cut.iter().all(|l| text_width(l, 10.0, false) <= 100.0));
    assert_eq!(cut.concat(), "x".repeat(60));
}

#[test]
fn the_scale_is_rdbu_in_ten_bins_with_readable_ink() {
    assert_eq!(logic_bin(0.0), 0);
    assert_eq!(logic_bin(9.99), 0);
    assert_eq!(logic_bin(10.0), 1);
    assert_eq!(logic_bin(49.9), 4);
    assert_eq!(logic_bin(50.0), 5);
    assert_eq!(logic_bin(100.0), 9);
    assert_eq!(logic_bin(-3.0), 0);
    assert_eq!(logic_bin(140.0), 9);
    assert_eq!(logic_class(73.3), "logic-7");
    assert_eq!(ink("#67001f"), LIGHT_INK);
    assert_eq!(ink("#fddbc7"), DARK_INK);
    assert_eq!(ink("#053061"), LIGHT_INK);
    // Every bin's text reaches WCAG AA's 4.5:1 on its fill.
    for fill in LOGIC_SCALE {
        assert!(contrast(fill, ink(fill)) >= 4.5, "{fill}");
    }
    let css = css();
    assert!(
        css.contains("svg.sop-graph g.logic-0>rect,svg.logic-legend rect.logic-0{fill:#67001f}")
    );
    assert!(css.contains("table.data td.logic-9{background:#053061;color:#ffffff}"));
    let legend = legend().into_string();
    assert_eq!(legend.matches("<rect class=\"bin logic-").count(), 10);
    assert!(legend.contains("data-from=\"90\" data-to=\"100\""));
    assert!(legend.contains("data-tick=\"50\""));
    assert!(legend.contains(">mean Logic<"));
    assert!(!legend.contains("style="));
}

/// CIELAB (D65) of a `#rrggbb` colour seen through `m`, a 3x3 matrix on linear RGB.
fn seen(hex: &str, m: [[f64; 3]; 3]) -> [f64; 3] {
    let linear = |i: usize| {
        let v = u8::from_str_radix(&hex[i..i + 2], 16).expect("hex") as f64 / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let c = [linear(1), linear(3), linear(5)];
    let s: Vec<f64> = m
        .iter()
        .map(|row| (row[0] * c[0] + row[1] * c[1] + row[2] * c[2]).clamp(0.0, 1.0))
        .collect();
    let x = (0.4124 * s[0] + 0.3576 * s[1] + 0.1805 * s[2]) / 0.95047;
    let y = 0.2126 * s[0] + 0.7152 * s[1] + 0.0722 * s[2];
    let z = (0.0193 * s[0] + 0.1192 * s[1] + 0.9505 * s[2]) / 1.08883;
    let f = |t: f64| {
        if t > 216.0 / 24389.0 {
            t.cbrt()
        } else {
            (24389.0 / 27.0 * t + 16.0) / 116.0
        }
    };
    [
        116.0 * f(y) - 16.0,
        500.0 * (f(x) - f(y)),
        200.0 * (f(y) - f(z)),
    ]
}

#[test]
fn every_bin_stays_distinct_under_simulated_colour_blindness() {
    // Machado, Oliveira and Fernandes (2009), severity 1: protanopia, deuteranopia,
    // tritanopia; and normal vision.
    let deficiencies = [
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ],
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ],
        [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.303900],
        ],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    ];
    for m in deficiencies {
        let labs: Vec<[f64; 3]> = LOGIC_SCALE.iter().map(|c| seen(c, m)).collect();
        for (i, a) in labs.iter().enumerate() {
            for (j, b) in labs.iter().enumerate().skip(i + 1) {
                let delta = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt();
                // CIE76 ΔE: about 2.3 is just noticeable; every two bins differ by 14 or more
                // (the former red-yellow-green scale: 0.2 under protanopia).
                assert!(delta > 14.0, "bins {i} and {j} under {m:?}: ΔE {delta:.1}");
            }
        }
    }
}

/// Whether two boxes overlap (touching edges do not).
fn overlap(a: Rect, b: Rect) -> bool {
    (a.x - b.x).abs() * 2.0 < a.w + b.w - 0.01 && (a.y - b.y).abs() * 2.0 < a.h + b.h - 0.01
}

#[test]
fn dagre_places_boxes_and_labels_apart_and_routes_edges_between_borders() {
    let sop = loopy();
    let used = GraphUse::default();
    let drawn = svg(&sop, &used, 0).expect("laid out").into_string();
    let g = sop.graph();
    // Lay the same graph out directly to check the geometry.
    let nodes: Vec<(f64, f64)> = g.node_indices().map(|_| (100.0, 40.0)).collect();
    let edges: Vec<_> = g
        .edge_references()
        .map(|e| EdgeBox {
            from: e.source().index(),
            to: e.target().index(),
            label: Some((60.0, 16.0)),
        })
        .collect();
    let d = layout(&nodes, &edges).expect("laid out");
    let labels: Vec<Rect> = d.edges.iter().filter_map(|e| e.label).collect();
    assert_eq!(labels.len(), edges.len());
    for (i, a) in d.nodes.iter().chain(&labels).enumerate() {
        for b in d.nodes.iter().chain(&labels).skip(i + 1) {
            assert!(!overlap(*a, *b), "{a:?} overlaps {b:?}");
        }
    }
    // Each edge starts on its source's border and ends on its target's.
    let on_border = |p: (f64, f64), b: Rect| {
        let dx = (p.0 - b.x).abs() - b.w / 2.0;
        let dy = (p.1 - b.y).abs() - b.h / 2.0;
        dx.max(dy).abs() < 0.5
    };
    for (e, laid) in g.edge_references().zip(&d.edges) {
        let points = &laid.points;
        assert!(
            on_border(points[0], d.nodes[e.source().index()]),
            "{points:?}"
        );
        let last = *points.last().expect("points");
        assert!(on_border(last, d.nodes[e.target().index()]), "{points:?}");
    }
    // The back edge s2 -> s1 is drawn, upwards.
    let back = g
        .edge_references()
        .find(|e| node_name(&sop, g[e.source()]) == "s2" && node_name(&sop, g[e.target()]) == "s1")
        .expect("s2 -> s1");
    let points = &d.edges[back.id().index()].points;
    assert!(points[0].1 > points[points.len() - 1].1, "{points:?}");
    assert!(drawn.contains("data-from=\"s2\" data-to=\"s1\""));
    // The long action name wraps, its box as wide as its widest line.
    assert!(drawn.contains(">A_Very_Long_Action_Name_<"), "{drawn}");
    assert!(drawn.contains(">That_Must_Wrap_Over_Lines<"), "{drawn}");
    assert!(!drawn.contains("style="));
}

#[test]
fn a_self_loop_is_drawn_round_its_node() {
    let nodes = [(80.0, 30.0), (80.0, 30.0)];
    let edges = [
        EdgeBox {
            from: 0,
            to: 0,
            label: None,
        },
        EdgeBox {
            from: 0,
            to: 1,
            label: Some((20.0, 14.0)),
        },
    ];
    let d = layout(&nodes, &edges).expect("laid out");
    let node = d.nodes[0];
    let points = &d.edges[0].points;
    assert!(points.len() >= 4, "{points:?}");
    // Beside the node, on its right, from its border back to it.
    assert!(points.iter().all(|p| p.0 >= node.x - 0.5), "{points:?}");
    assert!(
        points.iter().any(|p| p.0 > node.left() + node.w),
        "{points:?}"
    );
    let paths = edge_paths(&d, &edges);
    assert!(
        paths[0].0.starts_with('M') && paths[0].0.contains('C'),
        "{paths:?}"
    );
    // The other edge goes down from the bottom of node 0 to the top of node 1.
    let (down, points) = &paths[1];
    assert!(down.contains('L') || down.contains('C'), "{down}");
    let (first, last) = (points[0], points[points.len() - 1]);
    assert!((first.1 - (node.top() + node.h)).abs() < 1e-9, "{points:?}");
    assert!((last.1 - d.nodes[1].top()).abs() < 1e-9, "{points:?}");
}

#[test]
fn nodes_carry_their_logic_class_and_per_model_numbers() {
    let sop = loopy();
    let svg_text = svg(&sop, &GraphUse::default(), 0)
        .expect("svg")
        .into_string();
    assert_eq!(svg_text.matches("<g class=\"node untested\"").count(), 2);
    // Two models' turns through s1 to Done: the node's colour per model in its attributes.
    let mut used = GraphUse::default();
    let path = vec!["s1".to_string()];
    used.add("m1", &path, "Done", 80.0);
    used.add("m1", &path, "Done", 40.0);
    used.add("m<2>", &path, "Done", 100.0);
    assert_eq!(used.nodes["s1"].get(), Some(220.0 / 3.0));
    assert_eq!(used.nodes_by_model["s1"]["m1"].get(), Some(60.0));
    assert_eq!(used.nodes_by_model["Done"]["m<2>"].n(), 1);
    assert_eq!(used.edges[&("start".into(), "s1".into())], 3);
    assert_eq!(used.edges[&("s1".into(), "Done".into())], 3);
    let drawn = svg(&sop, &used, 0).expect("svg").into_string();
    assert!(drawn.contains("<g class=\"node logic-7\" data-stage=\"s1\" data-turns=\"3\" data-logic=\"73.33333333333333\" data-logic-by-model=\"{&quot;m1&quot;:60.0,&quot;m&lt;2&gt;&quot;:100.0}\" data-turns-by-model=\"{&quot;m1&quot;:2,&quot;m&lt;2&gt;&quot;:1}\">"), "{drawn}");
    assert!(drawn.contains("<text class=\"stat\""));
    assert!(drawn.contains(">Logic 73.33 · 3 turns<"));
    assert!(drawn.contains("data-action=\"Done\""));
    assert!(drawn.contains("data-from=\"start\" data-to=\"s1\" data-turns=\"3\""));
}
