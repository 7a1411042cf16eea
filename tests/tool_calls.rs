//! Function calling against mock servers (wiremock): the desk's tools offered to an
//! OpenAI-compatible and an Anthropic endpoint in their own wire formats, the model's tool calls
//! read back, and a follow-up carrying the assistant's calls and the tool results in the shape
//! each API wants.

use sage::llm::{
    ChatMessage, ChatRequest, ChatRole, Endpoint, ModelConfig, Provider, ToolCall, ToolSpec,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn desk_tools() -> Vec<ToolSpec> {
    sage::desk::tool_specs()
}

fn config(server: &MockServer, provider: Provider) -> ModelConfig {
    let mut c = ModelConfig::new("desk-model", provider);
    c.base_url = Some(format!("{}/v1", server.uri()));
    c.timeout_secs = 5.0;
    c
}

/// The first turn, and the follow-up after the agent looked the order up.
fn requests() -> (ChatRequest, ChatRequest) {
    let first = ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, "You run the Northline support desk."),
            ChatMessage::new(ChatRole::User, "Where is my order NL-10001?"),
        ],
        tools: desk_tools(),
        ..ChatRequest::default()
    };
    let mut follow_up = first.clone();
    follow_up.messages.push(ChatMessage::tool_calls(
        "",
        vec![ToolCall {
            id: "call_1".into(),
            name: "order_lookup".into(),
            arguments: r#"{"order_number":"NL-10001"}"#.into(),
        }],
    ));
    follow_up.messages.push(ChatMessage::tool_result(
        "call_1",
        r#"{"fulfilment":"shipped"}"#,
    ));
    (first, follow_up)
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON body"))
        .collect()
}

#[tokio::test]
async fn openai_function_calling() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {
                    "name": "order_lookup", "arguments": "{\"order_number\":\"NL-10001\"}"}}]
            }}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12}
        })))
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(config(&server, Provider::Openai), None).expect("endpoint");
    let (first, follow_up) = requests();
    let answer = endpoint.call(&first).await.result.expect("an answer");
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "order_lookup".into(),
            arguments: r#"{"order_number":"NL-10001"}"#.into()
        }]
    );
    assert_eq!(answer.text, "");
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    endpoint.call(&follow_up).await.result.expect("an answer");
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    // The tools, in OpenAI's shape.
    let tools = sent[0]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 7);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "order_lookup");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["order_number"])
    );
    // Plain messages carry no tool fields.
    assert_eq!(
        sent[0]["messages"][1],
        json!({"role": "user", "content": "Where is my order NL-10001?"})
    );
    // The follow-up: the assistant's call nested under `function`, then the tool's result.
    let messages = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(
        messages[2]["tool_calls"],
        json!([{"id": "call_1", "type": "function", "function": {
            "name": "order_lookup", "arguments": "{\"order_number\":\"NL-10001\"}"}}])
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "{\"fulfilment\":\"shipped\"}", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn anthropic_tool_use() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "content": [
                {"type": "text", "text": "Let me check that order."},
                {"type": "tool_use", "id": "toolu_1", "name": "order_lookup",
                 "input": {"order_number": "NL-10001"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 200, "output_tokens": 30}
        })))
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(config(&server, Provider::Anthropic), None).expect("endpoint");
    let (first, follow_up) = requests();
    let answer = endpoint.call(&first).await.result.expect("an answer");
    assert_eq!(answer.text, "Let me check that order.");
    assert_eq!(answer.tool_calls.len(), 1);
    assert_eq!(answer.tool_calls[0].id, "toolu_1");
    assert_eq!(answer.tool_calls[0].name, "order_lookup");
    let args: Value = serde_json::from_str(&answer.tool_calls[0].arguments).expect("JSON");
    assert_eq!(args, json!({"order_number": "NL-10001"}));
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_use"));
    endpoint.call(&follow_up).await.result.expect("an answer");
    let sent = bodies(&server).await;
    // Tools in Anthropic's shape.
    let tools = sent[0]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 7);
    assert_eq!(tools[6]["name"], "close_ticket");
    assert_eq!(tools[0]["input_schema"]["type"], "object");
    assert_eq!(
        sent[0]["system"][0]["text"],
        "You run the Northline support desk."
    );
    // The follow-up: a tool_use block in the assistant's turn, a tool_result block in a user turn.
    let messages = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "call_1",
            "name": "order_lookup", "input": {"order_number": "NL-10001"}}]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
            "content": "{\"fulfilment\":\"shipped\"}"}]})
    );
}

/// The shapes llama-cpp-python's server (0.3.36, `--chat_format hf-tokenizer-config`, the server
/// of `../shared/tools/local-model-server`) really answers with, captured from it: with `tools`
/// offered and no `tool_choice` it ignores them and answers plain text; when it does call a tool,
/// `content` is `null`, the call has a long generated id, `arguments` is a JSON string with
/// padding, and the message also carries the legacy `function_call`. Its request validation
/// rejects an assistant turn with `content: null` (HTTP 500), so the follow-up must send a string.
#[tokio::test]
async fn openai_llama_cpp_python_shapes() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-fea9f95e", "object": "chat.completion", "created": 1795321260,
            "model": "gemma3-270m",
            "choices": [{"index": 0, "message": {
                "content": "You run a support desk.\n\nWhere is my order NL-10002?",
                "role": "assistant"}, "logprobs": null, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 28, "completion_tokens": 60, "total_tokens": 88}
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let arguments = "{ \"order_number\": \"10001\" } ";
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-4293ae6d", "object": "chat.completion", "created": 1795321283,
            "model": "gemma3-270m",
            "choices": [{"index": 0, "message": {
                "content": null,
                "tool_calls": [{"id": "call__0_order_lookup_cmpl-4293ae6d", "type": "function",
                    "function": {"name": "order_lookup", "arguments": arguments}}],
                "role": "assistant",
                "function_call": {"name": "order_lookup", "arguments": arguments}},
                "logprobs": null, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 16, "total_tokens": 37}
        })))
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(config(&server, Provider::Openai), None).expect("endpoint");
    let (first, _) = requests();
    // Tools offered, plain text back: no calls, the text kept, the truncation reported.
    let called = endpoint.call(&first).await;
    let answer = called.result.expect("an answer");
    assert!(answer.tool_calls.is_empty());
    assert!(answer.text.starts_with("You run a support desk."));
    assert_eq!(answer.finish_reason.as_deref(), Some("length"));
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (28, 60)
    );
    // A call: read as sent, the arguments untouched (they parse as JSON).
    let answer = endpoint.call(&first).await.result.expect("an answer");
    assert_eq!(answer.text, "");
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall {
            id: "call__0_order_lookup_cmpl-4293ae6d".into(),
            name: "order_lookup".into(),
            arguments: arguments.into(),
        }]
    );
    let args: Value = serde_json::from_str(&answer.tool_calls[0].arguments).expect("JSON");
    assert_eq!(args, json!({"order_number": "10001"}));
    // The follow-up: the assistant's turn with calls carries a string content, never null.
    let mut follow_up = first.clone();
    follow_up.messages.push(ChatMessage::tool_calls(
        answer.text.clone(),
        answer.tool_calls.clone(),
    ));
    follow_up.messages.push(ChatMessage::tool_result(
        &answer.tool_calls[0].id,
        r#"{"fulfilment":"shipped"}"#,
    ));
    endpoint.call(&follow_up).await.result.expect("an answer");
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 3);
    let messages = sent[2]["messages"].as_array().expect("messages");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], json!(""));
    assert_eq!(
        messages[3]["tool_call_id"],
        "call__0_order_lookup_cmpl-4293ae6d"
    );
    assert!(sent[0].get("tool_choice").is_none());
}

/// Servers that stray from the API: `arguments` as a JSON object instead of a string, and a call
/// without an id. The call is read anyway (the object as its JSON text, an id made up from the
/// call so the tool's answer can refer to it).
#[tokio::test]
async fn openai_tool_calls_with_object_arguments_and_no_id() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "tool_calls": [
                    {"type": "function", "function": {"name": "order_lookup",
                        "arguments": {"order_number": "NL-10001"}}},
                    {"id": "x", "type": "function", "function": {"name": "close_ticket"}}]}}]
        })))
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(config(&server, Provider::Openai), None).expect("endpoint");
    let answer = endpoint
        .call(&requests().0)
        .await
        .result
        .expect("an answer");
    // The made-up id: deterministic, and not the plain index (which would repeat every round).
    let id = answer.tool_calls[0].id.clone();
    assert!(
        id.starts_with("call_0_") && id.len() > "call_0_".len(),
        "{id}"
    );
    let again = endpoint
        .call(&requests().0)
        .await
        .result
        .expect("an answer");
    assert_eq!(
        again.tool_calls[0].id, id,
        "the made-up id is deterministic"
    );
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall {
                id,
                name: "order_lookup".into(),
                arguments: r#"{"order_number":"NL-10001"}"#.into(),
            },
            ToolCall {
                id: "x".into(),
                name: "close_ticket".into(),
                arguments: String::new(),
            }
        ]
    );
}
