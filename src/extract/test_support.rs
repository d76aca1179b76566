//! Helpers the extractor's tests share: traces read in order as `inspect`
//! reads them, spans of one process.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::{Analysis, Extractor};
use crate::assemble::{SpanRecord, Trace};

/// Span `s` as one of process `process` (its resource's
/// `service.instance.id`).
pub(crate) fn in_process(mut s: SpanRecord, process: &str) -> SpanRecord {
    s.resource = Arc::new(Resource {
        attributes: vec![KeyValue {
            key: "service.instance.id".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(process.into())),
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    s
}

/// Reads `traces` in order as `inspect` does (calls left open carried
/// to the traces after).
pub(crate) fn read_in_order(traces: Vec<Trace>) -> Vec<Analysis> {
    let x = Extractor::default();
    let mut carry = super::carry::Carry::default();
    let mut out = Vec::new();
    for t in traces {
        let mut first = x.analyze(&t);
        let left = super::carry::Left::of(first.open.take(), || t);
        out.extend(carry.settle(first, left, |t, carried| {
            let mut a = x.analyze_carried(t, carried);
            let open = a.open.take();
            (a, open)
        }));
    }
    out.extend(carry.finish());
    out
}
