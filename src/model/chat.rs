//! A chat model's prompt template: the Jinja template its tokenizer config
//! ships (`chat_template` in `tokenizer_config.json`, or a GGUF file's
//! `tokenizer.chat_template`), rendered as transformers'
//! `apply_chat_template` renders it (blocks trimmed and left-stripped,
//! `raise_exception`, Python's string methods), with the generation
//! prompt, and tokenized without adding special tokens.

use super::{gguf, Model};
use anyhow::{anyhow, bail, Context};
use serde_json::Value;

/// A chat template and the special tokens it may name.
pub struct ChatTemplate {
    source: String,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// The template of `model`; an error when it ships none.
    pub fn of_model(model: &Model) -> anyhow::Result<Self> {
        if gguf::is_gguf_file(&model.folder) {
            let file = gguf::file::GgufFile::open(&model.folder)?;
            let source = file
                .string("tokenizer.chat_template")
                .map_err(|_| anyhow!("{} has no chat template", model.folder.display()))?
                .to_string();
            let token = |key: &str| {
                file.integer(key)
                    .ok()
                    .flatten()
                    .and_then(|id| model.tokenizer.id_to_token(id as u32))
                    .unwrap_or_default()
            };
            return Ok(Self {
                source,
                bos_token: token("tokenizer.ggml.bos_token_id"),
                eos_token: token("tokenizer.ggml.eos_token_id"),
            });
        }
        let path = model.folder.join("tokenizer_config.json");
        let no_template = || {
            anyhow!(
                "{} has no chat template (no chat_template in {})",
                model.name,
                path.display()
            )
        };
        let text = std::fs::read_to_string(&path).map_err(|_| no_template())?;
        let config: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        let source = match config.get("chat_template") {
            Some(Value::String(source)) => source.clone(),
            // Several named templates: the default one.
            Some(Value::Array(named)) => named
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
                .and_then(|t| t.get("template")?.as_str())
                .ok_or_else(no_template)?
                .to_string(),
            _ => return Err(no_template()),
        };
        // A token is written as text, or as an object with its `content`.
        let token = |key: &str| match config.get(key) {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Object(token)) => token
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        };
        Ok(Self {
            source,
            bos_token: token("bos_token"),
            eos_token: token("eos_token"),
        })
    }

    /// The prompt of one user message, with the generation prompt.
    pub fn render_user_message(&self, message: &str) -> anyhow::Result<String> {
        let mut env = minijinja::Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        env.add_template("chat", &self.source)
            .map_err(|e| anyhow!("the chat template does not parse: {e}"))?;
        let context = minijinja::context! {
            messages => vec![minijinja::context! { role => "user", content => message }],
            add_generation_prompt => true,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
        };
        let rendered = env
            .get_template("chat")
            .and_then(|t| t.render(context))
            .map_err(|e| anyhow!("the chat template failed: {e}"))?;
        if rendered.is_empty() {
            bail!("the chat template renders nothing");
        }
        Ok(rendered)
    }
}

/// The ids of `message` as the model's chat template prompts it: the
/// rendered template tokenized without adding special tokens (the
/// template writes its own), as transformers' `apply_chat_template`.
pub fn chat_prompt_ids(model: &Model, message: &str) -> anyhow::Result<Vec<u32>> {
    let rendered = ChatTemplate::of_model(model)?.render_user_message(message)?;
    let encoding = model
        .tokenizer
        .encode(rendered.as_str(), false)
        .map_err(|e| anyhow!("the tokenizer failed on the chat prompt: {e}"))?;
    Ok(encoding.get_ids().to_vec())
}
