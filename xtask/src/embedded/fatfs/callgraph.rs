//! GCC's call graph (`-fcallgraph-info=su`, one VCG file per object:
//! nodes carry the frame of `-fstack-usage`, edges the direct calls) and
//! the worst-case stack of a function along it. See GCC's manual,
//! "Developer Options", `-fcallgraph-info`.

use std::collections::HashMap;
use std::path::Path;

use super::read;

/// GCC's call graph (`-fcallgraph-info=su`, VCG): frames and direct calls.
#[derive(Default)]
pub(super) struct CallGraph {
    /// Node title to (name, frame bytes, qualifier: "static", "dynamic"...).
    frames: HashMap<String, (String, u64, String)>,
    calls: HashMap<String, Vec<String>>,
}

impl CallGraph {
    /// Reads every `.ci` file of `dir`.
    pub(super) fn read(dir: &Path) -> Result<Self, String> {
        let mut g = CallGraph::default();
        for obj in ["ff", "ffunicode", "main"] {
            g.add(&read(&dir.join(format!("{obj}.ci")))?);
        }
        Ok(g)
    }

    /// Adds one file's nodes and edges.
    pub(super) fn add(&mut self, text: &str) {
        for line in text.lines() {
            if line.starts_with("node:") {
                let (Some(title), Some(label)) = (quoted(line, "title"), quoted(line, "label"))
                else {
                    continue;
                };
                let mut parts = label.split("\\n");
                let name = parts.next().unwrap_or_default().to_string();
                let frame = parts.find_map(|p| {
                    let (n, q) = p.split_once(" bytes (")?;
                    Some((n.trim().parse().ok()?, q.trim_end_matches(')').to_string()))
                });
                if let Some((bytes, qual)) = frame {
                    self.frames.insert(title.to_string(), (name, bytes, qual));
                }
            } else if line.starts_with("edge:") {
                if let (Some(from), Some(to)) =
                    (quoted(line, "sourcename"), quoted(line, "targetname"))
                {
                    let callees = self.calls.entry(from.to_string()).or_default();
                    if !callees.iter().any(|c| c == to) {
                        callees.push(to.to_string());
                    }
                }
            }
        }
    }

    /// The worst-case stack from the entry of `root` (its frame and its
    /// deepest chain of callees) and that chain's names.
    pub(super) fn deepest(&self, root: &str) -> Result<(u64, Vec<String>), String> {
        let mut memo = HashMap::new();
        self.walk(root, &mut Vec::new(), &mut memo)
    }

    fn walk(
        &self,
        node: &str,
        path: &mut Vec<String>,
        memo: &mut HashMap<String, (u64, Vec<String>)>,
    ) -> Result<(u64, Vec<String>), String> {
        if let Some(done) = memo.get(node) {
            return Ok(done.clone());
        }
        if path.iter().any(|p| p == node) {
            return Err(format!("recursion: {} > {node}", path.join(" > ")));
        }
        let (name, frame, qual) = self
            .frames
            .get(node)
            .ok_or_else(|| format!("no stack frame known for {node} (called by {path:?})"))?;
        if qual != "static" {
            return Err(format!("{name} has a {qual} stack frame"));
        }
        path.push(node.to_string());
        let mut best = (0, Vec::new());
        for callee in self.calls.get(node).map(Vec::as_slice).unwrap_or_default() {
            let below = self.walk(callee, path, memo)?;
            if below.0 > best.0 || best.1.is_empty() {
                best = below;
            }
        }
        path.pop();
        let mut chain = vec![format!("{name} {frame}")];
        chain.extend(best.1);
        let result = (frame + best.0, chain);
        memo.insert(node.to_string(), result.clone());
        Ok(result)
    }
}

/// The quoted value after `key: ` in a VCG line.
fn quoted<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = &line[line.find(&format!("{key}: \""))? + key.len() + 3..];
    rest.find('"').map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_deepest_chain() {
        let mut g = CallGraph::default();
        g.add(concat!(
            "node: { title: \"f\" label: \"f\\nff.c:1:1\\n100 bytes (static)\" }\n",
            "node: { title: \"ff.c:g\" label: \"g\\nff.c:2:1\\n16 bytes (static)\" }\n",
            "node: { title: \"h\" label: \"h\\nff.h:3:1\" shape : ellipse }\n",
            "edge: { sourcename: \"f\" targetname: \"ff.c:g\" label: \"ff.c:5:1\" }\n",
            "edge: { sourcename: \"f\" targetname: \"h\" label: \"ff.c:6:1\" }\n",
            "edge: { sourcename: \"ff.c:g\" targetname: \"h\" }\n",
        ));
        assert!(g.deepest("f").is_err(), "h's frame is unknown");
        g.add("node: { title: \"h\" label: \"h\\nx.c:1:1\\n8 bytes (static)\" }\n");
        let (bytes, chain) = g.deepest("f").expect("known");
        assert_eq!(
            (bytes, chain),
            (124, vec!["f 100".into(), "g 16".into(), "h 8".into()])
        );
        g.add("edge: { sourcename: \"h\" targetname: \"f\" }\n");
        assert!(g.deepest("f").is_err(), "recursion");
        let mut d = CallGraph::default();
        d.add("node: { title: \"f\" label: \"f\\nff.c:1:1\\n8 bytes (dynamic)\" }\n");
        assert!(d.deepest("f").is_err(), "dynamic frame");
    }
}
