//! What a prompt is to the protocol core: a named message template with string arguments.
//!
//! The application hands the server `Box<dyn Prompt>` values; the core lists them, checks
//! required arguments before `get`, and asks a prompt to complete its arguments for
//! `completion/complete`. No I/O here.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::tool::{Content, InputRequired, RequestInfo};

/// One argument of a prompt (always a string on the wire).
#[derive(Debug, Clone, Default)]
pub struct PromptArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

/// Everything `prompts/list` says about a prompt.
#[derive(Debug, Clone, Default)]
pub struct PromptDefinition {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
}

impl PromptDefinition {
    pub fn to_json(&self, with_title: bool) -> Value {
        let mut entry = json!({"name": self.name});
        if with_title && let Some(title) = &self.title {
            entry["title"] = json!(title);
        }
        if let Some(description) = &self.description {
            entry["description"] = json!(description);
        }
        if !self.arguments.is_empty() {
            let arguments: Vec<Value> = self
                .arguments
                .iter()
                .map(|a| {
                    let mut arg = json!({"name": a.name, "required": a.required});
                    if let Some(description) = &a.description {
                        arg["description"] = json!(description);
                    }
                    arg
                })
                .collect();
            entry["arguments"] = Value::Array(arguments);
        }
        entry
    }

    /// The first required argument missing from `arguments`.
    pub fn missing_argument(&self, arguments: &BTreeMap<String, String>) -> Option<&str> {
        self.arguments
            .iter()
            .find(|a| a.required && !arguments.contains_key(&a.name))
            .map(|a| a.name.as_str())
    }
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One message of a prompt: a role and one content block.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

impl PromptMessage {
    pub fn user(content: Content) -> Self {
        PromptMessage {
            role: Role::User,
            content,
        }
    }

    pub fn to_json(&self) -> Value {
        let role = match self.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        json!({"role": role, "content": self.content.to_json()})
    }
}

/// What `prompts/get` returns.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptReply {
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
    /// 2026-07-28 only: ask the client for input first instead (see [`InputRequired`]).
    pub input_required: Option<InputRequired>,
}

impl PromptReply {
    pub fn new(description: Option<String>, messages: Vec<PromptMessage>) -> Self {
        PromptReply {
            description,
            messages,
            input_required: None,
        }
    }
}

/// A prompt as the server sees it.
pub trait Prompt: Send + Sync {
    fn definition(&self) -> &PromptDefinition;
    /// Builds the messages. Required arguments are present (the core checked); `request` says
    /// what else the request carried (client capabilities, answers to an input request). An
    /// error is a Spanish sentence about the arguments (`-32602`).
    fn get(
        &self,
        arguments: &BTreeMap<String, String>,
        request: &RequestInfo,
    ) -> Result<PromptReply, String>;
    /// Values for the argument `name` that start like `value`; `context` holds the arguments
    /// already chosen.
    fn complete(
        &self,
        _name: &str,
        _value: &str,
        _context: &BTreeMap<String, String>,
    ) -> Vec<String> {
        Vec::new()
    }
}
