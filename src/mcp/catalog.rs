//! The read-only methods over what a [`Service`] offers besides tools: prompts, resources,
//! resource templates and completions.
//!
//! Each function takes the request's params and returns the result object (without the
//! 2026-07-28 bookkeeping fields, which the session adds) or the JSON-RPC error to send.
//! Lists come on one page: clients read page 1 only, so no cursor is ever issued.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::jsonrpc::{ErrorCode, RpcError};
use super::resource::ResourceError;
use super::service::Service;
use super::tool::RequestInfo;
use super::version::ProtocolVersion;

/// At most this many completion values go back, as the spec allows.
const MAX_COMPLETIONS: usize = 100;

fn no_cursor(params: &Map<String, Value>, what: &str) -> Result<(), RpcError> {
    if params.get("cursor").is_some_and(|c| !c.is_null()) {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("cursor inválido: la lista de {what} tiene una sola página"),
        ));
    }
    Ok(())
}

fn text_param<'p>(params: &'p Map<String, Value>, key: &str) -> Result<&'p str, RpcError> {
    match params.get(key) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("'{key}' debe ser un texto"),
        )),
        None => Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("falta '{key}'"),
        )),
    }
}

pub(super) fn list_prompts(
    service: &Service,
    params: &Map<String, Value>,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    no_cursor(params, "prompts")?;
    let prompts: Vec<Value> = service
        .prompts
        .iter()
        .map(|p| p.definition().to_json(version.has_structured_output()))
        .collect();
    Ok(json!({"prompts": prompts}))
}

/// String arguments from a JSON object (`prompts/get`'s `arguments`, a completion context).
fn string_map(value: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, RpcError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(BTreeMap::new());
    };
    let Some(object) = value.as_object() else {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("'{what}' debe ser un objeto de textos"),
        ));
    };
    object
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key.clone(), text.clone())),
            _ => Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!("el argumento '{key}' debe ser un texto"),
            )),
        })
        .collect()
}

pub(super) fn get_prompt(
    service: &Service,
    params: &Map<String, Value>,
    request: &RequestInfo,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    let name = text_param(params, "name")?;
    let Some(prompt) = service.prompts.iter().find(|p| p.definition().name == name) else {
        let names: Vec<&str> = service
            .prompts
            .iter()
            .map(|p| p.definition().name.as_str())
            .collect();
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "prompt desconocido: {name}; los disponibles son: {}",
                names.join(", ")
            ),
        ));
    };
    let arguments = string_map(params.get("arguments"), "arguments")?;
    if let Some(missing) = prompt.definition().missing_argument(&arguments) {
        return Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!("falta el argumento obligatorio '{missing}' del prompt {name}"),
        ));
    }
    let reply = prompt
        .get(&arguments, request)
        .map_err(|reason| RpcError::new(ErrorCode::InvalidParams, reason))?;
    if let Some(input) = reply.input_required {
        if !version.is_modern() {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!(
                    "el prompt {name} necesita datos que esta versión del protocolo no permite pedir"
                ),
            ));
        }
        let mut result =
            json!({"resultType": "input_required", "inputRequests": input.input_requests});
        if let Some(state) = input.request_state {
            result["requestState"] = json!(state);
        }
        return Ok(result);
    }
    let messages: Vec<Value> = reply.messages.iter().map(|m| m.to_json()).collect();
    let mut result = json!({"messages": messages});
    if let Some(description) = reply.description {
        result["description"] = json!(description);
    }
    Ok(result)
}

pub(super) fn list_resources(
    service: &Service,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    no_cursor(params, "recursos")?;
    let resources: Vec<Value> = service
        .resources
        .iter()
        .map(|r| r.definition().to_json())
        .collect();
    Ok(json!({"resources": resources}))
}

pub(super) fn list_templates(
    service: &Service,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    no_cursor(params, "plantillas")?;
    let templates: Vec<Value> = service
        .templates
        .iter()
        .map(|t| t.definition().to_json())
        .collect();
    Ok(json!({"resourceTemplates": templates}))
}

pub(super) fn read_resource(
    service: &Service,
    params: &Map<String, Value>,
    version: ProtocolVersion,
) -> Result<Value, RpcError> {
    let uri = text_param(params, "uri")?;
    let outcome =
        if let Some(resource) = service.resources.iter().find(|r| r.definition().uri == uri) {
            resource.read()
        } else if let Some((template, variables)) = service
            .templates
            .iter()
            .find_map(|t| t.definition().matches(uri).map(|vars| (t, vars)))
        {
            template.read(uri, &variables)
        } else {
            Err(ResourceError::NotFound(format!(
                "no existe el recurso {uri}"
            )))
        };
    match outcome {
        Ok(contents) => {
            let contents: Vec<Value> = contents.iter().map(|c| c.to_json()).collect();
            Ok(json!({"contents": contents}))
        }
        Err(ResourceError::NotFound(reason)) => {
            // 2026-07-28 (SEP-2164) made an unknown resource an invalid-params error.
            let code = if version.is_modern() {
                ErrorCode::InvalidParams
            } else {
                ErrorCode::ResourceNotFound
            };
            Err(RpcError::with_data(
                code,
                json!({"uri": uri, "motivo": reason}),
            ))
        }
        Err(ResourceError::Failed(reason)) => Err(RpcError::new(ErrorCode::InternalError, reason)),
    }
}

pub(super) fn complete(service: &Service, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| RpcError::new(ErrorCode::InvalidParams, "falta 'ref' (un objeto)"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| RpcError::new(ErrorCode::InvalidParams, "falta 'argument' (un objeto)"))?;
    let name = text_param(argument, "name")?;
    let value = text_param(argument, "value")?;
    let context = string_map(
        params.get("context").and_then(|c| c.get("arguments")),
        "context.arguments",
    )?;
    let values = match text_param(reference, "type")? {
        "ref/prompt" => {
            let prompt_name = text_param(reference, "name")?;
            let prompt = service
                .prompts
                .iter()
                .find(|p| p.definition().name == prompt_name)
                .ok_or_else(|| {
                    RpcError::new(
                        ErrorCode::InvalidParams,
                        format!("prompt desconocido: {prompt_name}"),
                    )
                })?;
            prompt.complete(name, value, &context)
        }
        "ref/resource" => {
            let uri = text_param(reference, "uri")?;
            let template = service
                .templates
                .iter()
                .find(|t| t.definition().uri_template == uri)
                .ok_or_else(|| {
                    RpcError::new(
                        ErrorCode::InvalidParams,
                        format!("plantilla de recurso desconocida: {uri}"),
                    )
                })?;
            template.complete(name, value)
        }
        other => {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                format!("'ref.type' debe ser \"ref/prompt\" o \"ref/resource\", no \"{other}\""),
            ));
        }
    };
    let total = values.len();
    let shown: Vec<String> = values.into_iter().take(MAX_COMPLETIONS).collect();
    Ok(json!({"completion": {
        "values": shown,
        "total": total,
        "hasMore": total > MAX_COMPLETIONS,
    }}))
}
