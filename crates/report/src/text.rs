//! Text as the report draws it in SVG: the width of a text in the report's sans-serif font
//! ([`text_width`], from per-character advance tables) and a text cut into lines no wider than
//! a width ([`wrap`]). The SOP graphs size their boxes with it, the charts and the comparison's
//! forest plot their label columns.

/// Advance widths of the printable ASCII characters (space to `~`), in thousandths of an em:
/// per character the larger of DejaVu Sans (the sans-serif of most Linux desktops and of the
/// browser tests) and Liberation Sans (Arial's metrics), read from their `hmtx` tables. A text
/// measured with it fits in those fonts and in the narrower system fonts (Segoe UI, San
/// Francisco).
const REGULAR_WIDTHS: [u16; 95] = [
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 556, 1015, 684, 686, 722, 770, 667,
    611, 778, 752, 295, 500, 667, 557, 863, 748, 787, 667, 787, 722, 667, 611, 732, 684, 989, 685,
    667, 685, 390, 337, 390, 838, 556, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579,
    278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
];

/// [`REGULAR_WIDTHS`] of the bold faces (DejaVu Sans Bold, Liberation Sans Bold).
const BOLD_WIDTHS: [u16; 95] = [
    348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696,
    696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 611, 1000, 774, 762, 734, 830, 683,
    683, 821, 837, 372, 556, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771,
    724, 725, 457, 365, 457, 838, 556, 500, 675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665,
    343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652, 582, 712, 365, 712, 838,
];

/// The width in pixels of `text` set in the report's sans-serif at `size` pixels: printable
/// ASCII from the tables above, any other character one em (as wide as a CJK ideograph, wider
/// than accented Latin), so the estimate errs on the wide side.
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let table = if bold { &BOLD_WIDTHS } else { &REGULAR_WIDTHS };
    let thousandths: u64 = text
        .chars()
        .map(|c| match c {
            ' '..='~' => u64::from(table[c as usize - ' ' as usize]),
            _ => 1000,
        })
        .sum();
    thousandths as f64 * size / 1000.0
}

/// `text` cut into lines no wider than `max` pixels (at `size`, bold or not). Lines are filled
/// greedily with the largest pieces that fit: clauses (after `, `), then words (after a space,
/// `=`, `|`, `_`, `-`, `+` or `/`), then the parts of a camelCase word (before an upper-case letter
/// that follows a lower-case one), then characters. Never empty (an empty text is one empty
/// line).
pub fn wrap(text: &str, max: f64, size: f64, bold: bool) -> Vec<String> {
    let fits = |s: &str| text_width(s.trim_end(), size, bold) <= max;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    fill(text, 0, &fits, &mut lines, &mut line);
    let line = line.trim_end().to_string();
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Appends `text` to the lines being filled (`lines`, then the open `line`), cut at break
/// `level` (0 clauses, 1 words, 2 camelCase, 3 characters); a piece that fits on no line of
/// its own is cut at the next level.
fn fill(
    text: &str,
    level: usize,
    fits: &dyn Fn(&str) -> bool,
    lines: &mut Vec<String>,
    line: &mut String,
) {
    for piece in pieces(text, level) {
        let joined = format!("{line}{piece}");
        if fits(&joined) {
            *line = joined;
            continue;
        }
        if !line.trim_end().is_empty() {
            lines.push(line.trim_end().to_string());
        }
        line.clear();
        if fits(piece) || level == 3 {
            line.push_str(piece);
        } else {
            fill(piece, level + 1, fits, lines, line);
        }
    }
}

/// `text` split at the break opportunities of `level` (see [`fill`]), each piece keeping its
/// separator.
fn pieces(text: &str, level: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut previous: Option<char> = None;
    for (i, c) in text.char_indices() {
        let before = match level {
            2 => c.is_uppercase() && previous.is_some_and(char::is_lowercase),
            3 => true,
            _ => false,
        };
        if before && i > start {
            out.push(&text[start..i]);
            start = i;
        }
        let end = i + c.len_utf8();
        let after = match level {
            0 => c == ' ' && previous == Some(','),
            1 => matches!(c, ' ' | '=' | '|' | '_' | '-' | '+' | '/'),
            _ => false,
        };
        if after {
            out.push(&text[start..end]);
            start = end;
        }
        previous = Some(c);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}
