//! One model call asked of a role ([`ModelCallRequest`]): the suites whose driver writes its
//! own prompts (tau2 retail) reach every model through it, so such a suite adds no role logic
//! here. The role actors answer it with the same registry of endpoints (limits, caches, retries)
//! as every other request.

use crate::roles::{JudgePanel, Registry, ServiceRole, UserRole, with_request};
use sage_core::protocol::call::{ModelCallReply, ModelCallRequest};
use sage_ports::llm::ChatRequest;

impl Registry {
    /// Makes the call with the endpoint of `request.model`; a failure (after the endpoint's
    /// retries) or a model not served here is the reply's `error`.
    pub async fn model_call(&self, request: ModelCallRequest) -> ModelCallReply {
        let mut reply = ModelCallReply {
            text: String::new(),
            tool_calls: Vec::new(),
            finish_reason: None,
            calls: Vec::new(),
            error: None,
        };
        let endpoint = match self.endpoint(&request.model) {
            Ok(e) => e,
            Err(e) => {
                reply.error = Some(e);
                return reply;
            }
        };
        let chat = ChatRequest {
            messages: request.messages,
            tools: request.tools,
            json: request.json,
            facts: request.facts,
            ..ChatRequest::default()
        };
        let called = endpoint.call(&chat).await;
        reply.calls.push(with_request(
            called.record,
            &chat.messages,
            self.record_prompts,
        ));
        match called.result {
            Ok(r) => {
                reply.text = r.text;
                reply.tool_calls = r.tool_calls;
                reply.finish_reason = r.finish_reason;
            }
            Err(e) => reply.error = Some(format!("{}: {e}", request.model)),
        }
        reply
    }
}

impl ServiceRole {
    /// A model call of the agent under test.
    pub async fn call(&self, request: ModelCallRequest) -> ModelCallReply {
        self.0.model_call(request).await
    }
}

impl UserRole {
    /// A model call of the customer.
    pub async fn call(&self, request: ModelCallRequest) -> ModelCallReply {
        self.0.model_call(request).await
    }
}

impl JudgePanel {
    /// A model call of a judge.
    pub async fn call(&self, request: ModelCallRequest) -> ModelCallReply {
        self.0.model_call(request).await
    }
}
