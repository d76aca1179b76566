//! A tool call as fixtures state it and metrics compare it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::matchers::{self, Pattern};
use crate::value::PyValue;

/// One tool call as the metrics see it: a name and optional arguments.
///
/// `args: None` (absent) is distinct from `Some({})` (present but empty):
/// deepeval and mlflow treat them differently.
#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// The same arguments as Python's `json.loads` sees them: keys in the order
    /// written, exact integers. `serde_json::Map` sorts keys, but ragas compares
    /// `str()` of nested dicts, which follows insertion order. `None`: presets
    /// derive it from `args` (keys sorted). Not part of equality.
    #[serde(skip)]
    pub ordered_args: Option<Arc<PyValue>>,
    /// The argument matchers of an expected call, compiled when the fixture
    /// was read ([`Call::expected`]); `None` when its arguments hold none.
    /// `args` keeps them as written, for output, equality and the presets.
    #[serde(skip)]
    pub matchers: Option<Arc<Pattern>>,
}

impl Call {
    pub fn new(name: impl Into<String>, args: Option<Value>) -> Self {
        Call {
            name: name.into(),
            args,
            ordered_args: None,
            matchers: None,
        }
    }

    /// An expected call as a fixture states it: argument matchers in `args`
    /// are compiled, and a bad one is an error naming its key path under
    /// `at()` (only called when there is a matcher, so plain fixtures build
    /// no path).
    pub fn expected(
        name: impl Into<String>,
        args: Option<Value>,
        at: impl FnOnce() -> String,
    ) -> Result<Self, String> {
        let mut call = Call::new(name, args);
        if let Some(a) = call.args.as_ref().filter(|a| matchers::any(a)) {
            call.matchers = Some(Arc::new(matchers::compile(a, &at())?));
        }
        Ok(call)
    }

    /// A call whose arguments were parsed with their key order kept
    /// (`PyValue::parse`); sets both `args` and `ordered_args`.
    pub fn with_ordered_args(name: impl Into<String>, args: PyValue) -> Self {
        Call {
            name: name.into(),
            args: Some(args.to_json()),
            ordered_args: Some(Arc::new(args)),
            matchers: None,
        }
    }

    /// A call whose arguments are the JSON text `args_json`, key order kept.
    pub fn from_args_json(
        name: impl Into<String>,
        args_json: &str,
    ) -> Result<Self, serde_json::Error> {
        Ok(Call::with_ordered_args(name, PyValue::parse(args_json)?))
    }
}

impl PartialEq for Call {
    fn eq(&self, other: &Call) -> bool {
        self.name == other.name && self.args == other.args
    }
}
