//! Projection at decode: keep only the attributes something downstream
//! reads (docs/architecture.md, "Replay at scale"). The set is data,
//! computed once per run from the extraction rules, the trace facts, the
//! session keys and the fixtures' join keys; everything else is skipped
//! by the decoder without being allocated.

use std::collections::HashSet;

use super::otlp_json::{AttrsOf, KeyFilter};

/// Which attributes to keep, by where they sit. Ids, names, kinds, times,
/// status and event names are always kept.
///
/// Span attributes are kept whole: the lookup of the calls a model
/// requested reads any attribute that holds JSON (docs/conventions.md).
/// Resource attributes are read only by joins and sessions, event
/// attributes only by the rules that name them, the user-message and
/// exception readers; scope and link attributes by nothing.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    resource: Keys,
    event: Keys,
}

/// A set of exact keys.
#[derive(Debug, Clone, Default)]
struct Keys(HashSet<String>);

impl Projection {
    /// Keeps `keys` on resources (join and session keys).
    pub fn resource_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.resource.0.extend(keys.into_iter().map(Into::into));
        self
    }

    /// Keeps `keys` on span events.
    pub fn event_keys<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Self {
        self.event.0.extend(keys.into_iter().map(Into::into));
        self
    }
}

impl KeyFilter for Projection {
    fn keep(&self, at: AttrsOf, key: &str) -> bool {
        match at {
            AttrsOf::Span => true,
            AttrsOf::Resource => self.resource.0.contains(key),
            AttrsOf::Event => self.event.0.contains(key),
            AttrsOf::Scope | AttrsOf::Link => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_is_read_where_it_is_read() {
        let p = Projection::default()
            .resource_keys(["session.id"])
            .event_keys(["content"]);
        assert!(p.keep(AttrsOf::Span, "anything.at.all"));
        assert!(p.keep(AttrsOf::Resource, "session.id"));
        assert!(!p.keep(AttrsOf::Resource, "service.instance.id"));
        assert!(p.keep(AttrsOf::Event, "content"));
        assert!(!p.keep(AttrsOf::Event, "exception.stacktrace"));
        assert!(!p.keep(AttrsOf::Scope, "content"));
    }
}
