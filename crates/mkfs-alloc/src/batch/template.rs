//! [`LabelTemplate`]: numbered labels for a batch (`KIT{n:03}`).

use std::fmt::Write as _;

/// A volume label with the target's number in it: `{n}` is the number,
/// `{n:03}` the number zero-padded to three digits, `{{` and `}}` are
/// braces. A template without `{n}` gives every target the same label.
///
/// ```
/// use mkfs_alloc::batch::LabelTemplate;
/// let t: LabelTemplate = "KIT{n:03}".parse()?;
/// assert_eq!(t.render(7), "KIT007");
/// assert_eq!(t.render(1234), "KIT1234");
/// assert!("KIT{m}".parse::<LabelTemplate>().is_err());
/// # Ok::<(), mkfs_alloc::batch::TemplateError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelTemplate {
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TemplatePart {
    Text(String),
    Number { width: usize },
}

/// A label template that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{` without its `}`, or a `}` without its `{`.
    #[error("unbalanced brace at character {at} of {template:?}; write {{{{ and }}}} for braces")]
    Brace {
        /// The template.
        template: String,
        /// Position of the brace, in characters from 1.
        at: usize,
    },
    /// A placeholder other than `{n}` and `{n:0W}`.
    #[error("unknown placeholder {{{placeholder}}} in {template:?}; valid: {{n}}, {{n:03}} (the target's number, zero-padded to 3 digits)")]
    Placeholder {
        /// The template.
        template: String,
        /// What stood between the braces.
        placeholder: String,
    },
}

impl std::str::FromStr for LabelTemplate {
    type Err = TemplateError;

    fn from_str(s: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        // Positions counted in characters from 1, as a reader counts them.
        let mut chars = s.chars().enumerate().map(|(i, c)| (i + 1, c)).peekable();
        let brace = |at| TemplateError::Brace {
            template: s.to_string(),
            at,
        };
        while let Some((at, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|&(_, c)| c) == Some('{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek().map(|&(_, c)| c) == Some('}') => {
                    chars.next();
                    text.push('}');
                }
                '}' => return Err(brace(at)),
                '{' => {
                    let mut inner = String::new();
                    loop {
                        match chars.next() {
                            Some((_, '}')) => break,
                            Some((_, c)) => inner.push(c),
                            None => return Err(brace(at)),
                        }
                    }
                    let width =
                        placeholder_width(&inner).ok_or_else(|| TemplateError::Placeholder {
                            template: s.to_string(),
                            placeholder: inner.clone(),
                        })?;
                    if !text.is_empty() {
                        parts.push(TemplatePart::Text(std::mem::take(&mut text)));
                    }
                    parts.push(TemplatePart::Number { width });
                }
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(TemplatePart::Text(text));
        }
        Ok(LabelTemplate { parts })
    }
}

/// `n` → 0, `n:03` → 3 (zero padding; a width of up to 11, a label's length).
fn placeholder_width(inner: &str) -> Option<usize> {
    match inner.split_once(':') {
        None if inner == "n" => Some(0),
        Some(("n", w)) if w.len() >= 2 && w.starts_with('0') => {
            w[1..].parse().ok().filter(|&w: &usize| w <= 11)
        }
        _ => None,
    }
}

impl LabelTemplate {
    /// The label of target number `n`.
    pub fn render(&self, n: u64) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                TemplatePart::Text(t) => out.push_str(t),
                TemplatePart::Number { width } => {
                    let _ = write!(out, "{n:0width$}");
                }
            }
        }
        out
    }

    /// True when the template holds the number (`{n}`).
    pub fn is_numbered(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, TemplatePart::Number { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_render_and_refuse_what_they_cannot_read() {
        let t = |s: &str| s.parse::<LabelTemplate>();
        assert_eq!(t("A{n}B").map(|t| t.render(12)), Ok("A12B".into()));
        assert_eq!(t("{{n}}{n:02}").map(|t| t.render(3)), Ok("{n}03".into()));
        assert_eq!(t("PLAIN").map(|t| t.is_numbered()), Ok(false));
        assert!(t("KIT{n:03}").is_ok_and(|t| t.is_numbered()));
        for bad in ["{n", "n}", "{x}", "{n:3}", "{n:0x}", "{n:099}", "{}"] {
            assert!(t(bad).is_err(), "{bad}");
        }
        // The brace's position as a reader counts: from 1, in characters.
        let at = |s: &str| match t(s) {
            Err(TemplateError::Brace { at, .. }) => Some(at),
            _ => None,
        };
        assert_eq!(at("KIT{"), Some(4));
        assert_eq!(at("}"), Some(1));
        assert_eq!(at("ÄÖ}"), Some(3));
        assert_eq!(at("A{n}{B"), Some(5));
    }
}
