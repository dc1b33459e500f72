//! Text helpers every layer may use: escaping for the terminal, the one plain-text table
//! writer, counts with their noun, cutting long names, and amounts in millionths. They know no
//! crate type, so the core, the engines and the writers above them share one wording.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a character is shown as an escape sequence in terminal text: control characters
/// (C0, DEL, C1), the backslash (so an escaped name never looks like another name), characters
/// that reorder or break lines in a terminal (bidirectional controls, line and paragraph
/// separators), and the noncharacters U+FFFE and U+FFFF.
fn needs_escape(ch: char) -> bool {
    ch == '\\'
        || ch.is_control()
        || matches!(ch, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(ch, '\u{fffe}' | '\u{ffff}')
}

/// Escapes a name or message for terminal text: `\n`, `\r`, `\t` and `\\` as in Rust string
/// literals; any other control character (C0, DEL, C1), bidirectional control, line or paragraph
/// separator, U+FFFE or U+FFFF as `\u{1b}` (lowercase hex). The backslash is doubled so that an
/// escaped name never reads like another name. Text without such characters is returned as it is.
///
/// ```
/// use fleetplan::render::escape_text;
/// assert_eq!(escape_text("chat"), "chat");
/// assert_eq!(escape_text("a\u{1b}[31mb\nc\td\\e"), "a\\u{1b}[31mb\\nc\\td\\\\e");
/// ```
pub fn escape_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        match ch {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            ch if needs_escape(ch) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(ch));
            }
            ch => out.push(ch),
        }
    }
    Cow::Owned(out)
}

/// Column alignment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A plain-text table: a header row and data rows, columns padded to their widest cell. The one
/// table writer of the crate (plans, violations, consolidation, the reliability report); every
/// cell is escaped with [`escape_text`] when the table is rendered, so callers pass raw names.
pub(crate) struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|(name, _)| name.to_string()).collect(),
            align: columns.iter().map(|(_, align)| *align).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders every line prefixed with `indent`; trailing spaces are trimmed.
    pub(crate) fn render(&self, indent: &str) -> String {
        let columns = self.headers.len();
        let escape_row =
            |cells: &Vec<String>| -> Vec<String> { cells.iter().map(|cell| escape_text(cell).into_owned()).collect() };
        let lines: Vec<Vec<String>> = std::iter::once(&self.headers).chain(&self.rows).map(escape_row).collect();
        let mut widths: Vec<usize> = vec![0; columns];
        for cells in &lines {
            for (width, cell) in widths.iter_mut().zip(cells) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for cells in &lines {
            let mut line = String::from(indent);
            for column in 0..columns {
                let cell = cells.get(column).map(String::as_str).unwrap_or("");
                let width = widths.get(column).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.chars().count());
                if column > 0 {
                    line.push_str("  ");
                }
                match self.align.get(column) {
                    Some(Align::Right) => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                    _ => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `1 copy`, `2 copies`.
pub(crate) fn counted(count: impl Into<u64>, singular: &str, plural: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { singular } else { plural })
}

/// The plural `s` of a noun counted `count` times: `""` for one, `"s"` otherwise.
pub(crate) fn plural(count: u64) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// A millionths value as a decimal with at least two and at most six fraction digits.
pub(crate) fn micros_text(micros: i128) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let magnitude = micros.unsigned_abs();
    let whole = magnitude / 1_000_000;
    let fraction = format!("{:06}", magnitude % 1_000_000);
    let trimmed = fraction.trim_end_matches('0');
    let digits = if trimmed.len() < 2 { &fraction[..2] } else { trimmed };
    format!("{sign}{whole}.{digits}")
}

/// Cuts `text` to `max_chars` characters, ending with `…` when cut.
pub(crate) fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    if text.chars().count() <= max_chars {
        Cow::Borrowed(text)
    } else {
        let mut short: String = text.chars().take(max_chars.saturating_sub(1)).collect();
        short.push('…');
        Cow::Owned(short)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_with_one_ellipsis() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcde…");
        assert_eq!(counted(1_u64, "copy", "copies"), "1 copy");
        assert_eq!(format!("2 instance{}", plural(2)), "2 instances");
    }

    #[test]
    fn micros_keep_precision_and_two_digits() {
        assert_eq!(micros_text(0), "0.00");
        assert_eq!(micros_text(20_980_000), "20.98");
        assert_eq!(micros_text(1_212_500), "1.2125");
        assert_eq!(micros_text(3_000_001), "3.000001");
        assert_eq!(micros_text(-1_500_000), "-1.50");
    }

    #[test]
    fn escape_text_covers_controls_bidi_and_noncharacters() {
        assert!(matches!(escape_text("plain ünïcode ✓"), Cow::Borrowed("plain ünïcode ✓")));
        assert_eq!(escape_text("a\r\nb"), "a\\r\\nb");
        assert_eq!(escape_text("\u{0}\u{7f}\u{85}\u{9f}"), "\\u{0}\\u{7f}\\u{85}\\u{9f}");
        assert_eq!(escape_text("x\u{202e}y\u{2066}z\u{2028}"), "x\\u{202e}y\\u{2066}z\\u{2028}");
        assert_eq!(escape_text("\u{fffe}\u{ffff}\u{fffd}"), "\\u{fffe}\\u{ffff}\u{fffd}");
        // Two different names never escape to the same text.
        assert_ne!(escape_text("a\nb"), escape_text("a\\nb"));
    }

    #[test]
    fn table_cells_and_headers_are_escaped_before_measuring() {
        let mut table = Table::new(&[("AZ\t1", Align::Left), ("N", Align::Right)]);
        table.row(vec!["x\u{1b}[1m".into(), "1".into()]);
        table.row(vec!["two\nlines".into(), "22".into()]);
        assert_eq!(table.render(""), "AZ\\t1        N\nx\\u{1b}[1m   1\ntwo\\nlines  22\n");
    }

    #[test]
    fn table_aligns_columns_and_trims() {
        let mut table = Table::new(&[("A", Align::Left), ("NUMBER", Align::Right), ("LAST", Align::Left)]);
        table.row(vec!["long-name".into(), "7".into(), "".into()]);
        table.row(vec!["x".into(), "12345678".into(), "z".into()]);
        assert_eq!(table.render(""), "A            NUMBER  LAST\nlong-name         7\nx          12345678  z\n");
    }
}
