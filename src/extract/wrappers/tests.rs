//! Unit tests of the result and argument wrappers (`super`).

use super::*;
use serde_json::json;

fn loose(v: Value) -> Value {
    call_record(v, &[], None).unwrap_or_else(|v| v)
}

fn named(v: Value, schema: &str) -> Result<Value, Value> {
    let names = parameter_names(schema).unwrap_or_default();
    call_record(v, &["sanitize_inputs_outputs"], Some(&names))
}

#[test]
fn args_kwargs_keeps_positional() {
    assert_eq!(
        loose(json!({"args": [], "kwargs": {"a": 1}})),
        json!({"a": 1})
    );
    assert_eq!(
        loose(json!({"args": ["Tokyo"], "kwargs": {}})),
        json!({"args": ["Tokyo"]})
    );
    assert_eq!(loose(json!({"city": "x"})), json!({"city": "x"}));
}

#[test]
fn positional_arguments_are_named_from_the_schema_in_declared_order() {
    let inputs = r#"{"zone": {"type": "string"}, "at": {"type": "string"}}"#;
    let rec = json!({"args": ["Paris", "noon"], "sanitize_inputs_outputs": true, "kwargs": {}});
    assert_eq!(
        named(rec, inputs),
        Ok(json!({"zone": "Paris", "at": "noon"}))
    );
    let schema = r#"{"type": "object", "properties": {"zone": {}, "at": {}}}"#;
    let rec = json!({"args": ["Paris"], "kwargs": {"at": "noon"}});
    assert_eq!(
        named(rec, schema),
        Ok(json!({"zone": "Paris", "at": "noon"}))
    );
    // smolagents: one dict of parameters is the keyword arguments.
    let rec = json!({"args": [{"zone": "Rome"}], "sanitize_inputs_outputs": false, "kwargs": {}});
    assert_eq!(named(rec, inputs), Ok(json!({"zone": "Rome"})));
    // More positional values than names: kept as a list.
    let rec = json!({"args": [1, 2, 3], "kwargs": {}});
    assert_eq!(named(rec, inputs), Ok(json!({"args": [1, 2, 3]})));
    // `kwargs` alone (LlamaIndex, DSPy), unless it is a parameter.
    let rec = json!({"kwargs": {"zone": "Oslo"}});
    assert_eq!(named(rec.clone(), inputs), Ok(json!({"zone": "Oslo"})));
    let own = r#"{"properties": {"kwargs": {"type": "object"}}}"#;
    assert!(named(rec, own).is_err());
    // Not a call record: left alone.
    assert!(named(json!({"args": [1]}), inputs).is_err());
    assert!(named(json!({"zone": "x"}), inputs).is_err());
}

#[test]
fn a_langgraph_command_adding_one_tool_message_is_its_content() {
    let message = json!({"content": "{\"fare\": 149}", "additional_kwargs": {},
        "response_metadata": {}, "type": "tool", "tool_call_id": "call_1", "status": "success"});
    let command = |messages: Value| json!({"graph": null, "update": {"messages": messages}, "resume": null, "goto": []});
    assert_eq!(
        langchain_message(command(json!([message]))),
        Ok(json!({"fare": 149}))
    );
    // Near misses: two messages, no tool message, a key a Command lacks.
    let two = command(json!([message, message]));
    assert_eq!(langchain_message(two.clone()), Err(two));
    let human = command(json!([{"content": "hi", "type": "human"}]));
    assert_eq!(langchain_message(human.clone()), Err(human));
    let mut other = command(json!([message]));
    other["state"] = json!(1);
    assert_eq!(langchain_message(other.clone()), Err(other));
    // The message as `message_to_dict` writes it (OpenInference's Python
    // `Command`), and near misses of that form.
    let as_dict = json!({"type": "tool", "data": message});
    assert_eq!(
        langchain_message(command(json!([as_dict]))),
        Ok(json!({"fare": 149}))
    );
    let human = command(json!([{"type": "human", "data": message}]));
    assert_eq!(langchain_message(human.clone()), Err(human));
    let extra = command(json!([{"type": "tool", "data": message, "x": 1}]));
    assert_eq!(langchain_message(extra.clone()), Err(extra));
}

#[test]
fn a_langgraph_js_command_in_openinferences_output_is_its_message() {
    let message = json!({"lc": 1, "type": "constructor",
        "id": ["langchain_core", "messages", "ToolMessage"],
        "kwargs": {"content": "{\"fare\": 149}", "tool_call_id": "call_1", "name": "task"}});
    let command = |name: &str, messages: Value| {
        json!({"output": {"lg_name": name,
        "update": {"files": {}, "messages": messages}, "goto": []}})
    };
    assert_eq!(
        langchain_message(command("Command", json!([message]))),
        Ok(json!({"fare": 149}))
    );
    // Near misses: another class, two messages, a key beside `output`.
    let send = command("Send", json!([message]));
    assert_eq!(langchain_message(send.clone()), Err(send));
    let two = command("Command", json!([message, message]));
    assert_eq!(langchain_message(two.clone()), Err(two));
    let mut beside = command("Command", json!([message]));
    beside["kwargs"] = json!({});
    assert_eq!(langchain_message(beside.clone()), Err(beside));
}

#[test]
fn langchain_callback_payloads() {
    let start = json!({"input_str": "{'device_name': 'R1'}", "tags": [], "metadata": {},
        "inputs": {"device_name": "R1"}, "kwargs": {"name": "show"}});
    assert_eq!(langchain_callback(start), Ok(json!({"device_name": "R1"})));
    let bare =
        json!({"input_str": "Paris", "tags": null, "metadata": null, "inputs": null, "kwargs": {}});
    assert_eq!(langchain_callback(bare), Ok(json!("Paris")));
    let end = json!({"output": {"lc": 1, "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": "{\"up\": true}", "tool_call_id": "c1"}}, "kwargs": {}});
    assert_eq!(langchain_callback(end), Ok(json!({"up": true})));
    let plain = json!({"output": "ok", "kwargs": {"color": "green"}});
    assert_eq!(langchain_callback(plain), Ok(json!("ok")));
    assert!(langchain_callback(json!({"input_str": "x", "other": 1})).is_err());
}

#[test]
fn instrumentation_wrappers_unwrap_only_their_exact_shape() {
    let mcp = json!({"tool_name": "t", "arguments": {"a": 1}});
    assert_eq!(mcp_tool_call(mcp), Ok(json!({"a": 1})));
    assert!(mcp_tool_call(json!({"tool_name": "t", "arguments": {}, "x": 1})).is_err());
    assert!(mcp_tool_call(json!([{"type": "image", "content": "x"}])).is_err());
    let out = json!({"blocks": [], "tool_name": "t", "raw_input": {}, "raw_output": "{\"k\": 2}", "is_error": false});
    assert_eq!(llama_index_output(out), Ok(json!({"k": 2})));
    assert!(llama_index_output(json!({"raw_output": 1, "tool_name": "t", "extra": 0})).is_err());
    let run = json!({"input": {"q": "x"}, "options": null});
    assert_eq!(beeai_run(run), Ok(json!({"q": "x"})));
    assert!(beeai_run(json!({"input": "x", "options": null})).is_err());
    let resp = json!({"id": "c1", "name": "t", "response": {"ok": true}});
    assert_eq!(adk_function_response(resp), Ok(json!({"ok": true})));
    assert!(adk_function_response(json!({"name": "t", "response": 1, "other": 2})).is_err());
    let call = json!({"name": "t", "arguments": "{\"a\": [1]}"});
    assert_eq!(ag2_function(call), Ok(json!({"a": [1]})));
    assert!(ag2_function(json!({"name": "t", "arguments": "not json"})).is_err());
    let result = json!([true, {"name": "t", "role": "function", "content": "7"}]);
    assert_eq!(ag2_function(result), Ok(json!(7)));
    assert!(ag2_function(json!([1, {"name": "t", "content": "7"}])).is_err());
}

#[test]
fn a_list_of_text_content_reprs_gives_their_texts() {
    let one = r#"[TextContent(inner_content=TextContent(type='text', text='{"tide": 4}', annotations=None, meta=None), ai_model_id=None, metadata={}, content_type='text', text='{"tide": 4}', encoding=None)]"#;
    assert_eq!(text_content_reprs(one), Some(json!({"tide": 4})));
    let two = "[TextContent(text='a'), TextContent(text='b')]";
    assert_eq!(text_content_reprs(two), Some(json!(["a", "b"])));
    for kept in [
        // Another class, a text that is no string, a list of no
        // instance, an empty list, one instance outside a list.
        "[ImageBlock(text='a')]",
        "[TextContent(text=4)]",
        "['a', 'b']",
        "[]",
        "TextContent(text='a')",
        "[TextContent(text='a'), 'b']",
    ] {
        assert_eq!(text_content_reprs(kept), None, "{kept}");
    }
}

#[test]
fn a_tool_messages_repr_gives_its_content_and_nothing_else_does() {
    let off = |t: &str| langchain_message_repr(json!(t));
    assert_eq!(
        off("content='{\"seats\": 2}' name='book' tool_call_id='t-9'"),
        Ok(json!({"seats": 2}))
    );
    assert_eq!(
        off("content=\"it's done\" tool_call_id='t-9' status='success' additional_kwargs={}"),
        Ok(json!("it's done"))
    );
    for kept in [
        // No call id, another first field, a key no ToolMessage has,
        // a value that is no literal, two spaces, text around it.
        "content='x' name='book'",
        "name='book' content='x' tool_call_id='t'",
        "content='x' tool_call_id='t' city='Oslo'",
        "content=Booking(id=1) tool_call_id='t'",
        "content='x'  tool_call_id='t'",
        "result: content='x' tool_call_id='t'",
        "content= 'x' tool_call_id='t'",
    ] {
        assert_eq!(off(kept), Err(json!(kept)), "{kept}");
    }
    assert_eq!(off("x").map_err(|_| ()), Err(()));
    assert_eq!(
        langchain_message_repr(json!({"content": "x"})),
        Err(json!({"content": "x"}))
    );
}

#[test]
fn only_javascripts_object_text_is_a_placeholder() {
    for p in [
        "[object ToolMessage]",
        " [object Object] ",
        "[object Tool_Result2]",
    ] {
        assert!(is_js_placeholder(p), "{p}");
    }
    for kept in [
        "[object]",
        "[object toolMessage]",
        "[object Tool Message]",
        "[object ToolMessage] extra",
        "object ToolMessage",
        "[\"object ToolMessage\"]",
        "",
    ] {
        assert!(!is_js_placeholder(kept), "{kept}");
    }
}

#[test]
fn the_ai_sdk_s_execute_record_gives_its_arguments() {
    let opts = json!({"toolCallId": "k9", "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        ai_sdk_execute(json!({"args": [{"seat": "2F"}, opts]})),
        Ok(json!({"seat": "2F"}))
    );
    for kept in [
        // Options of another shape, a third element, another key.
        json!({"args": [{"seat": "2F"}, {"messages": []}]}),
        json!({"args": [{"seat": "2F"}, {"toolCallId": "k9", "user": "u"}]}),
        json!({"args": [{"seat": "2F"}, {"toolCallId": "k9"}, 3]}),
        json!({"args": [{"seat": "2F"}, {"toolCallId": "k9"}], "kwargs": {}}),
        json!({"args": ["2F", {"toolCallId": "k9"}]}),
    ] {
        assert_eq!(ai_sdk_execute(kept.clone()), Err(kept));
    }
}

#[test]
fn one_provider_block_comes_off_and_nothing_else_does() {
    assert_eq!(provider_block(json!([{"json": [1]}])), Ok(json!([1])));
    assert_eq!(
        provider_block(json!([{"text": "{\"a\": 1}"}])),
        Ok(json!({"a": 1}))
    );
    assert_eq!(provider_block(json!([{"text": "ok"}])), Ok(json!("ok")));
    // A Cohere v2 document block, in a list of one or alone.
    let doc = json!({"type": "document", "document": {"data": "{\"a\": 1}"}});
    assert_eq!(provider_block(json!([doc.clone()])), Ok(json!({"a": 1})));
    assert_eq!(provider_block(doc), Ok(json!({"a": 1})));
    for kept in [
        json!([{"json": 1}, {"text": "x"}]),
        json!([{"text": 3}]),
        json!([{"image": {}}]),
        json!({"json": 1}),
        json!([]),
        // A document block beside another, or with a key more.
        json!([{"type": "document", "document": {"data": "x"}}, {"text": "y"}]),
        json!({"type": "document", "document": {"data": "x", "title": "t"}}),
        json!({"type": "document", "document": {"data": "x"}, "id": "d"}),
    ] {
        assert_eq!(provider_block(kept.clone()), Err(kept));
    }
}

#[test]
fn a_lone_key_comes_off_only_a_value_that_is_no_object() {
    let off = |v: Value| lone_key_around_non_object(v, "res");
    assert_eq!(off(json!({"res": "x"})), Ok(json!("x")));
    assert_eq!(off(json!({"res": [{"a": 1}]})), Ok(json!([{"a": 1}])));
    assert_eq!(off(json!({"res": false})), Ok(json!(false)));
    assert_eq!(off(json!({"res": "{\"a\": 1}"})), Ok(json!("{\"a\": 1}")));
    for kept in [
        json!({"res": {"a": 1}}),
        json!({"res": 1, "b": 2}),
        json!({"other": 1}),
        json!(["res"]),
        json!("res"),
    ] {
        assert_eq!(off(kept.clone()), Err(kept));
    }
}

#[test]
fn a_lone_plural_key_comes_off_only_a_list() {
    let off = |v: Value| lone_key_around_array(v, "results");
    assert_eq!(off(json!({"results": [{"a": 1}]})), Ok(json!([{"a": 1}])));
    for kept in [
        json!({"results": {"a": 1}}),
        json!({"results": "x"}),
        json!({"results": [1], "b": 2}),
    ] {
        assert_eq!(off(kept.clone()), Err(kept));
    }
}

#[test]
fn unwraps_content_blocks_and_tool_messages() {
    assert_eq!(
        content_blocks(json!([{"text": "{\"city\": \"Paris\"}"}])),
        Ok(json!({"city": "Paris"}))
    );
    assert_eq!(
        content_blocks(json!([{"text": "a"}, {"text": "b"}])),
        Ok(json!(["a", "b"]))
    );
    assert_eq!(content_blocks(json!([1, 2])), Err(json!([1, 2])));
    let env = json!({"type": "tool", "data": {"content": "{\"x\": 1}", "tool_call_id": "c"}});
    assert_eq!(tool_message(env), Ok(json!({"x": 1})));
    assert_eq!(
        tool_message(json!({"type": "other"})),
        Err(json!({"type": "other"}))
    );
}

#[test]
fn json_text_in_a_string_comes_off_only_around_an_object_or_a_list() {
    // IQ AI's ADK JSON-encodes the response's JSON text once more.
    let object = json!({"berth": "C14", "nights": [1, 2]});
    let list = json!([{"slot": "D4"}, "D7"]);
    for v in [&object, &list] {
        let held = Value::String(format!(" {v}"));
        assert_eq!(shape(Unwrap::JsonText, held), Ok(v.clone()));
    }
    // Near misses: plain text, a JSON string's text, a number's, text that
    // only opens like an object, a value that is no string.
    for kept in [
        json!("berth C14"),
        json!("\"berth C14\""),
        json!("42"),
        json!("{berth: C14}"),
        object.clone(),
    ] {
        assert_eq!(shape(Unwrap::JsonText, kept.clone()), Err(kept));
    }
}

#[test]
fn one_json_text_in_a_list_comes_off_only_around_an_object() {
    // Monocle's record of an MCP call's arguments: the OTLP array of the
    // one JSON argument.
    let object = json!({"group": {"school": "De Regenboog", "pupils": 28}});
    let held = json!([object.to_string()]);
    assert_eq!(shape(Unwrap::LoneJsonText, held), Ok(object.clone()));
    assert_eq!(shape(Unwrap::LoneJsonText, json!(["{}"])), Ok(json!({})));
    // A list's text, two texts, plain text, the object itself stay.
    for kept in [
        json!(["[1, 2]"]),
        json!(["{}", "{}"]),
        json!(["De Regenboog"]),
        json!([]),
        object,
    ] {
        assert_eq!(shape(Unwrap::LoneJsonText, kept.clone()), Err(kept));
    }
}
