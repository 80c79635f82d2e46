//! Escaping for the markup the renderers write by hand (HTML, its inline SVG timelines).
//! A leaf module: [`super::html`], [`super::timeline`] and [`super::qualification`] all use
//! it, and it uses none of them.

/// Escapes text for HTML/SVG/XML content and attribute values. XML 1.0 cannot carry most
/// control characters at all; they become U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// GitHub's heading anchor for a case heading `` `name` ``.
pub fn anchor(name: &str) -> String {
    name.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '_' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>\u{1}\n"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\u{fffd}\n"
        );
    }
}
