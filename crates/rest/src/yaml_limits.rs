//! Owns the bounds on what a YAML request body may cost, checked before it is decoded:
//! how deep it nests and how many values its aliases expand to.
//!
//! - **Nesting.** libyaml's scanner does work proportional to the open flow collections
//!   (`[`, `{`) at every token, so a body of `[`×100,000 cost 46 s of CPU, and
//!   serde_yaml_ng's own recursion limit (128) applies only after the whole document is
//!   parsed. Past [`MAX_NESTING`] the body is refused.
//! - **Aliases.** An anchor of n values aliased n times decodes to n² values from O(n)
//!   bytes (5.6 KB took 121 MB); serde_yaml_ng only limits alias jumps per event. The
//!   values every alias stands for are counted, and past [`max_values`] the body is
//!   refused, as kube-apiserver refuses "excessive aliasing" (go-yaml's CVE-2019-11253).
//!
//! Both are counted on the event stream of the same parser (unsafe-libyaml, the one
//! serde_yaml_ng decodes with, so both agree on what a body holds), which stops at the
//! first event past a bound: at most 129 levels are ever open, so the pass is linear in
//! the body (about 1 ms for 1 MB of `[`). A document libyaml cannot parse is left to the
//! decoder to report.

use std::collections::HashMap;
use std::ffi::CStr;
use std::mem::MaybeUninit;

use unsafe_libyaml as yaml;

/// How deep a YAML or JSON body may nest: serde_json's and serde_yaml_ng's own
/// recursion limit, which every body meets anyway once decoded.
pub const MAX_NESTING: usize = 128;

/// How many values a body of `len` bytes may decode to, aliases expanded: a document
/// without aliases has fewer values than bytes; this leaves twice that, and 10,000 for
/// small bodies, to aliases.
pub fn max_values(len: usize) -> usize {
    len.saturating_mul(2).max(10_000)
}

/// Which bound a body went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Nesting,
    Aliasing,
}

/// One collection being read: the values in it so far, and its anchor.
struct Open {
    values: usize,
    anchor: Option<Vec<u8>>,
}

/// Checks `body` against the nesting bound `max_depth` and the value bound `max_values`.
pub fn check(body: &[u8], max_depth: usize, max_values: usize) -> Result<(), Exceeded> {
    let mut parser = MaybeUninit::<yaml::yaml_parser_t>::zeroed();
    // SAFETY: libyaml's documented life cycle: initialize, set the input (which outlives
    // the parser: `body` is borrowed for this whole function), parse events (each read
    // before it is deleted, its anchor copied out), delete the parser. The parser is
    // never moved after initialize.
    unsafe {
        if !yaml::yaml_parser_initialize(parser.as_mut_ptr()).ok {
            return Ok(());
        }
        let parser = parser.as_mut_ptr();
        yaml::yaml_parser_set_input_string(parser, body.as_ptr(), body.len() as u64);
        let mut count = Counter { open: Vec::new(), anchors: HashMap::new(), total: 0, max_depth, max_values };
        let result = loop {
            let mut event = MaybeUninit::<yaml::yaml_event_t>::zeroed();
            if !yaml::yaml_parser_parse(parser, event.as_mut_ptr()).ok {
                break Ok(());
            }
            let e = event.as_ptr();
            let kind = (*e).type_;
            let anchor = |p: *const u8| (!p.is_null()).then(|| CStr::from_ptr(p.cast()).to_bytes().to_vec());
            let step = match kind {
                yaml::YAML_SEQUENCE_START_EVENT => count.start(anchor((*e).data.sequence_start.anchor)),
                yaml::YAML_MAPPING_START_EVENT => count.start(anchor((*e).data.mapping_start.anchor)),
                yaml::YAML_SEQUENCE_END_EVENT | yaml::YAML_MAPPING_END_EVENT => count.end(),
                yaml::YAML_SCALAR_EVENT => count.value(1, anchor((*e).data.scalar.anchor)),
                yaml::YAML_ALIAS_EVENT => {
                    let n = anchor((*e).data.alias.anchor).and_then(|a| count.anchors.get(&a).copied()).unwrap_or(0);
                    count.value(n, None)
                }
                yaml::YAML_STREAM_END_EVENT | yaml::YAML_NO_EVENT => Err(None),
                _ => Ok(()),
            };
            yaml::yaml_event_delete(event.as_mut_ptr());
            match step {
                Ok(()) => {}
                Err(None) => break Ok(()),
                Err(Some(exceeded)) => break Err(exceeded),
            }
        };
        yaml::yaml_parser_delete(parser);
        result
    }
}

/// The running counts of one pass. `Err(None)` ends the pass without a finding.
struct Counter {
    open: Vec<Open>,
    /// Each anchor's value count, its aliases expanded.
    anchors: HashMap<Vec<u8>, usize>,
    total: usize,
    max_depth: usize,
    max_values: usize,
}

impl Counter {
    fn start(&mut self, anchor: Option<Vec<u8>>) -> Result<(), Option<Exceeded>> {
        if self.open.len() >= self.max_depth {
            return Err(Some(Exceeded::Nesting));
        }
        self.add(1)?;
        self.open.push(Open { values: 1, anchor });
        Ok(())
    }

    fn end(&mut self) -> Result<(), Option<Exceeded>> {
        let Some(done) = self.open.pop() else { return Ok(()) };
        if let Some(a) = done.anchor {
            self.anchors.insert(a, done.values);
        }
        if let Some(parent) = self.open.last_mut() {
            parent.values = parent.values.saturating_add(done.values);
        }
        Ok(())
    }

    /// A scalar (1) or an alias (the values its anchor stands for).
    fn value(&mut self, n: usize, anchor: Option<Vec<u8>>) -> Result<(), Option<Exceeded>> {
        self.add(n)?;
        if let Some(a) = anchor {
            self.anchors.insert(a, n);
        }
        if let Some(parent) = self.open.last_mut() {
            parent.values = parent.values.saturating_add(n);
        }
        Ok(())
    }

    fn add(&mut self, n: usize) -> Result<(), Option<Exceeded>> {
        self.total = self.total.saturating_add(n);
        if self.total > self.max_values {
            return Err(Some(Exceeded::Aliasing));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_default(body: &str) -> Result<(), Exceeded> {
        check(body.as_bytes(), MAX_NESTING, max_values(body.len()))
    }

    #[test]
    fn deep_flow_and_block_nesting_stop_at_the_limit() {
        let n = 100_000;
        let flow = "[".repeat(n) + &"]".repeat(n);
        assert_eq!(check_default(&flow), Err(Exceeded::Nesting));
        let maps = "{a: ".repeat(n) + &"}".repeat(n);
        assert_eq!(check_default(&maps), Err(Exceeded::Nesting));
        let block = "- ".repeat(n) + "x\n";
        assert_eq!(check_default(&block), Err(Exceeded::Nesting));
        let indented: String = (0..200).map(|i| " ".repeat(i) + "a:\n").collect();
        assert_eq!(check_default(&indented), Err(Exceeded::Nesting));
    }

    #[test]
    fn ordinary_documents_pass() {
        let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: \"[[[\"}\ndata:\n  s: |\n    [[[[ not flow\n  l: '[[['\n";
        assert_eq!(check_default(doc), Ok(()));
        let exactly = "[".repeat(MAX_NESTING) + &"]".repeat(MAX_NESTING);
        assert_eq!(check_default(&exactly), Ok(()));
        let one_more = "[".repeat(MAX_NESTING + 1) + &"]".repeat(MAX_NESTING + 1);
        assert_eq!(check_default(&one_more), Err(Exceeded::Nesting));
        // Not YAML at all: left to the decoder to report.
        assert_eq!(check_default("a: [b\n  - c: }"), Ok(()));
        // Many documents and wide collections are neither deep nor aliased.
        let wide = "[".to_string() + &"[1],".repeat(50_000) + "]\n---\n{}\n";
        assert_eq!(check_default(&wide), Ok(()));
        // Aliases used as manifests use them (merge keys, shared values) pass.
        let merge = "defaults: &d {cpu: 1, memory: 2Gi}\na: {<<: *d, x: 1}\nb: {<<: *d, y: 2}\nc: *d\n";
        assert_eq!(check_default(merge), Ok(()));
    }

    #[test]
    fn aliases_that_multiply_values_are_refused() {
        // An anchor of n values aliased n times: n² values from O(n) bytes.
        let n = 1_000;
        let items = vec!["x"; n].join(", ");
        let aliases = vec!["*a"; n].join(", ");
        let square = format!("a: &a [{items}]\nb: [{aliases}]\n");
        assert_eq!(check_default(&square), Err(Exceeded::Aliasing));
        // The billion laughs: each level aliases the one before ten times.
        let mut laughs = String::from("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let prev = vec![format!("*l{}", i - 1); 10].join(", ");
            laughs += &format!("l{i}: &l{i} [{prev}]\n");
        }
        assert_eq!(check_default(&laughs), Err(Exceeded::Aliasing));
        // A few aliases of a small anchor are fine.
        let few = format!("a: &a [{}]\nb: [*a, *a, *a]\n", vec!["x"; 100].join(", "));
        assert_eq!(check_default(&few), Ok(()));
    }
}
