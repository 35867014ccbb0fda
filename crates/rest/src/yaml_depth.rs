//! Owns the nesting bound on YAML request bodies, checked before they are decoded.
//!
//! libyaml's scanner does work proportional to the open flow collections (`[`, `{`) at
//! every token, so a body of `[`×100,000 cost 46 s of CPU, and serde_yaml_ng's own
//! recursion limit (128) applies only after the whole document is parsed. Here the same
//! parser (unsafe-libyaml, the one serde_yaml_ng decodes with, so both agree on what
//! nests) streams its events and stops at the first collection deeper than
//! [`MAX_NESTING`]: at most 129 levels are ever open, so the cost is linear in the body
//! (about 1 ms for 1 MB of `[`). A document libyaml cannot parse is left to the decoder
//! to report.

use std::mem::MaybeUninit;

use unsafe_libyaml as yaml;

/// How deep a YAML or JSON body may nest: serde_json's and serde_yaml_ng's own
/// recursion limit, which every body meets anyway once decoded.
pub const MAX_NESTING: usize = 128;

/// Whether no collection in `body` nests deeper than `max` (false at the first that does).
pub fn within(body: &[u8], max: usize) -> bool {
    let mut parser = MaybeUninit::<yaml::yaml_parser_t>::zeroed();
    // SAFETY: libyaml's documented life cycle: initialize, set the input (which outlives
    // the parser: `body` is borrowed for this whole function), parse events (each one
    // deleted after use), delete the parser. The parser is never moved after initialize.
    unsafe {
        if !yaml::yaml_parser_initialize(parser.as_mut_ptr()).ok {
            return true;
        }
        let parser = parser.as_mut_ptr();
        yaml::yaml_parser_set_input_string(parser, body.as_ptr(), body.len() as u64);
        let mut depth = 0usize;
        let within = loop {
            let mut event = MaybeUninit::<yaml::yaml_event_t>::zeroed();
            if !yaml::yaml_parser_parse(parser, event.as_mut_ptr()).ok {
                break true;
            }
            let kind = (*event.as_ptr()).type_;
            yaml::yaml_event_delete(event.as_mut_ptr());
            match kind {
                yaml::YAML_SEQUENCE_START_EVENT | yaml::YAML_MAPPING_START_EVENT => {
                    depth += 1;
                    if depth > max {
                        break false;
                    }
                }
                yaml::YAML_SEQUENCE_END_EVENT | yaml::YAML_MAPPING_END_EVENT => depth = depth.saturating_sub(1),
                yaml::YAML_STREAM_END_EVENT | yaml::YAML_NO_EVENT => break true,
                _ => {}
            }
        };
        yaml::yaml_parser_delete(parser);
        within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_flow_and_block_nesting_stop_at_the_limit() {
        let n = 100_000;
        let flow = "[".repeat(n) + &"]".repeat(n);
        assert!(!within(flow.as_bytes(), MAX_NESTING));
        let maps = "{a: ".repeat(n) + &"}".repeat(n);
        assert!(!within(maps.as_bytes(), MAX_NESTING));
        let block = "- ".repeat(n) + "x\n";
        assert!(!within(block.as_bytes(), MAX_NESTING));
        let indented: String = (0..200).map(|i| " ".repeat(i) + "a:\n").collect();
        assert!(!within(indented.as_bytes(), MAX_NESTING));
    }

    #[test]
    fn ordinary_documents_pass() {
        let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {x: \"[[[\"}\ndata:\n  s: |\n    [[[[ not flow\n  l: '[[['\n";
        assert!(within(doc.as_bytes(), MAX_NESTING));
        let exactly = "[".repeat(MAX_NESTING) + &"]".repeat(MAX_NESTING);
        assert!(within(exactly.as_bytes(), MAX_NESTING));
        let one_more = "[".repeat(MAX_NESTING + 1) + &"]".repeat(MAX_NESTING + 1);
        assert!(!within(one_more.as_bytes(), MAX_NESTING));
        // Not YAML at all: left to the decoder to report.
        assert!(within(b"a: [b\n  - c: }", MAX_NESTING));
        // Many documents and wide collections are not deep.
        let wide = "[".to_string() + &"[1],".repeat(50_000) + "]\n---\n{}\n";
        assert!(within(wide.as_bytes(), MAX_NESTING));
    }
}
