//! What a resource is to the protocol core: a fixed URI or a URI template, and what reading
//! it returns.
//!
//! The application hands the server `Box<dyn Resource>` and `Box<dyn ResourceTemplate>`
//! values; the core lists them, matches a `resources/read` URI to one, and asks a template
//! for completions of its variables. Any MIME type and a free `_meta` object travel with a
//! definition (an interactive view, say, is a resource with its own type and metadata).
//! Templates are RFC 6570 level 1: `{name}` stands for one path segment. No I/O here.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// Everything `resources/list` says about a fixed resource.
#[derive(Debug, Clone, Default)]
pub struct ResourceDefinition {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    /// Sent as `_meta` in the listing (and with the contents when read).
    pub meta: Option<Value>,
}

impl ResourceDefinition {
    pub fn to_json(&self) -> Value {
        let mut entry = json!({"uri": self.uri, "name": self.name});
        optional(&mut entry, "title", self.title.as_ref());
        optional(&mut entry, "description", self.description.as_ref());
        optional(&mut entry, "mimeType", self.mime_type.as_ref());
        if let Some(meta) = &self.meta {
            entry["_meta"] = meta.clone();
        }
        entry
    }
}

/// Everything `resources/templates/list` says about a template.
#[derive(Debug, Clone, Default)]
pub struct TemplateDefinition {
    /// RFC 6570 level 1, e.g. `esquema://cosas/{nombre}`.
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub meta: Option<Value>,
}

impl TemplateDefinition {
    pub fn to_json(&self) -> Value {
        let mut entry = json!({"uriTemplate": self.uri_template, "name": self.name});
        optional(&mut entry, "title", self.title.as_ref());
        optional(&mut entry, "description", self.description.as_ref());
        optional(&mut entry, "mimeType", self.mime_type.as_ref());
        if let Some(meta) = &self.meta {
            entry["_meta"] = meta.clone();
        }
        entry
    }

    /// The variables of `uri` when it fits this template (each `{name}` one non-empty
    /// segment without `/`), else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match_template(&self.uri_template, uri)
    }

    /// The variable names, in order.
    pub fn variables(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = self.uri_template.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}') else {
                break;
            };
            names.push(rest[open + 1..open + close].to_owned());
            rest = &rest[open + close + 1..];
        }
        names
    }
}

fn optional(entry: &mut Value, key: &str, value: Option<&String>) {
    if let Some(value) = value {
        entry[key] = Value::String(value.clone());
    }
}

/// One item of `resources/read`'s `contents` (also an embedded resource in a tool result or a
/// prompt message).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: Body,
    pub meta: Option<Value>,
}

/// Text, or bytes already in base64.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Text(String),
    Blob(String),
}

impl ResourceContents {
    pub fn text(uri: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.to_owned()),
            body: Body::Text(text.into()),
            meta: None,
        }
    }

    pub fn blob(uri: impl Into<String>, mime_type: &str, base64: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.to_owned()),
            body: Body::Blob(base64.into()),
            meta: None,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("uri".into(), Value::String(self.uri.clone()));
        if let Some(mime) = &self.mime_type {
            entry.insert("mimeType".into(), Value::String(mime.clone()));
        }
        match &self.body {
            Body::Text(text) => entry.insert("text".into(), Value::String(text.clone())),
            Body::Blob(blob) => entry.insert("blob".into(), Value::String(blob.clone())),
        };
        if let Some(meta) = &self.meta {
            entry.insert("_meta".into(), meta.clone());
        }
        Value::Object(entry)
    }
}

/// Why a resource could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// No such resource (an unknown name in a template's variable, say).
    #[error("{0}")]
    NotFound(String),
    /// It exists but cannot be read now (no data yet…): a Spanish sentence.
    #[error("{0}")]
    Failed(String),
}

/// A resource at a fixed URI.
pub trait Resource: Send + Sync {
    fn definition(&self) -> &ResourceDefinition;
    fn read(&self) -> Result<Vec<ResourceContents>, ResourceError>;
}

/// A family of resources named by a URI template.
pub trait ResourceTemplate: Send + Sync {
    fn definition(&self) -> &TemplateDefinition;
    /// Reads `uri`, whose variables are `variables` (the template matched).
    fn read(
        &self,
        uri: &str,
        variables: &BTreeMap<String, String>,
    ) -> Result<Vec<ResourceContents>, ResourceError>;
    /// Values for the variable `name` that start like `value` (`completion/complete`).
    fn complete(&self, _name: &str, _value: &str) -> Vec<String> {
        Vec::new()
    }
}

/// Matches `uri` against a level-1 template: literal text must be equal, each `{var}` takes a
/// non-empty run of characters up to the next literal (and never a `/`). Variables are
/// percent-decoded.
fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut variables = BTreeMap::new();
    let (mut t, mut u) = (template, uri);
    loop {
        let Some(open) = t.find('{') else {
            return (t == u).then_some(variables);
        };
        let literal = &t[..open];
        u = u.strip_prefix(literal)?;
        let close = open + t[open..].find('}')?;
        let name = &t[open + 1..close];
        t = &t[close + 1..];
        let next_literal_end = t.find('{').unwrap_or(t.len());
        let next_literal = &t[..next_literal_end];
        let end = if next_literal.is_empty() {
            u.len()
        } else {
            u.find(next_literal)?
        };
        let value = &u[..end];
        if value.is_empty() || value.contains('/') {
            return None;
        }
        variables.insert(name.to_owned(), percent_decode(value));
        u = &u[end..];
    }
}

/// `%20` → space; invalid escapes are kept as written.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(template: &str, uri: &str, expected: Option<&[(&str, &str)]>) {
        let got = match_template(template, uri);
        let expected = expected.map(|pairs| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        });
        assert_eq!(got, expected, "{template} vs {uri}");
    }

    #[test]
    fn templates_match_one_segment_per_variable() {
        check("a://x/{id}/data", "a://x/42/data", Some(&[("id", "42")]));
        check("a://x/{id}/data", "a://x//data", None);
        check("a://x/{id}/data", "a://x/1/2/data", None);
        check(
            "a://x/{id}",
            "a://x/Ruta%20Norte",
            Some(&[("id", "Ruta Norte")]),
        );
        check("a://x/{id}", "a://y/1", None);
        check("a://{a}-{b}", "a://1-2", Some(&[("a", "1"), ("b", "2")]));
        check("a://fixed", "a://fixed", Some(&[]));
    }

    #[test]
    fn variables_are_listed_in_order() {
        let t = TemplateDefinition {
            uri_template: "a://{uno}/b/{dos}".into(),
            ..TemplateDefinition::default()
        };
        assert_eq!(t.variables(), ["uno", "dos"]);
    }
}
