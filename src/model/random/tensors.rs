//! Every tensor a checkpoint of a given family and shape holds, as the
//! loader reads them: the BERT-like encoders' names from the family
//! description ([`crate::model::family`]); GPT-2's `wte`, `wpe`, `h.N.*` with Conv1D
//! weights stored inputs × outputs; the Llama family's `embed_tokens`,
//! `layers.N.*`, with grouped-query key/value projections and the biases
//! the config asks for; ModernBERT's `embeddings.*` and `layers.N.attn.Wqkv`,
//! `mlp.Wi` (input and gate side by side), its first layer without
//! `attn_norm`; the newer families' own (GPT-NeoX's `embed_in`,
//! `attention.query_key_value`, `mlp.dense_h_to_4h`, `final_layer_norm`;
//! Phi-3's `qkv_proj` and `gate_up_proj`; the q/k norms; Gemma's and
//! OLMo's norms after the sublayers), by the names
//! [`crate::model::config::pre_norm`] gives each family. The final norm and
//! the language-model head, which the study does not read, are written too,
//! as a real checkpoint has them.

use crate::model::config::pre_norm::{
    attention_names, feed_forward_names, final_norm_name, norm_names, FeedForwardLayout, QkNorm,
    QkvLayout,
};
use crate::model::config::{ModelConfig, PreNormShape};
use crate::model::family::Family;

/// Every tensor of a model of this family and shape, with its name and shape.
pub fn tensor_shapes(config: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    if let Some(shape) = &config.pre_norm {
        return pre_norm_tensor_shapes(config, shape);
    }
    let family = config.family;
    let (h, i, e) = (
        config.hidden_size,
        config.intermediate_size,
        config.embedding_width(),
    );
    let embeddings = family.embedding_names();
    let mut shapes = vec![(
        format!("{}.weight", embeddings.words),
        vec![config.vocab_size, e],
    )];
    // DistilBERT's sinusoidal table is left out, as transformers computes it.
    if !config.sinusoidal_pos_embds {
        shapes.push((
            format!("{}.weight", embeddings.positions),
            vec![config.max_position_embeddings, e],
        ));
    }
    if let Some(types) = embeddings.token_types {
        shapes.push((format!("{types}.weight"), vec![config.type_vocab_size, e]));
    }
    shapes.push((format!("{}.weight", embeddings.norm), vec![e]));
    shapes.push((format!("{}.bias", embeddings.norm), vec![e]));
    if let Some(projection) = family.projection_name(e, h) {
        shapes.push((format!("{projection}.weight"), vec![h, e]));
        shapes.push((format!("{projection}.bias"), vec![h]));
    }
    let names = family.layer_names();
    for layer in 0..config.distinct_layers() {
        let p = family.layer_prefix(layer, config.inner_group_num);
        for (name, out_dim, in_dim) in [
            (names.query, h, h),
            (names.key, h, h),
            (names.value, h, h),
            (names.attention_output, h, h),
            (names.intermediate, i, h),
            (names.output, h, i),
        ] {
            shapes.push((format!("{p}.{name}.weight"), vec![out_dim, in_dim]));
            shapes.push((format!("{p}.{name}.bias"), vec![out_dim]));
        }
        for norm in [names.attention_norm, names.output_norm] {
            shapes.push((format!("{p}.{norm}.weight"), vec![h]));
            shapes.push((format!("{p}.{norm}.bias"), vec![h]));
        }
    }
    shapes
}

/// Whether a tensor of [`tensor_shapes`] is a LayerNorm's weight.
pub(super) fn is_norm_weight(config: &ModelConfig, name: &str) -> bool {
    if config.pre_norm.is_some() {
        return is_pre_norm_weight(name);
    }
    let layer = config.family.layer_names();
    let Some(stem) = name.strip_suffix(".weight") else {
        return false;
    };
    [
        config.family.embedding_names().norm,
        layer.attention_norm,
        layer.output_norm,
    ]
    .iter()
    .any(|norm| stem.ends_with(norm))
}

/// (name, shape) of every tensor of a pre-norm model of this shape.
fn pre_norm_tensor_shapes(config: &ModelConfig, shape: &PreNormShape) -> Vec<(String, Vec<usize>)> {
    let (h, i, v) = (
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
    );
    let mut shapes = Vec::new();
    let mut add = |name: String, dims: Vec<usize>| shapes.push((name, dims));
    if config.family == Family::Gpt2 {
        add("wte.weight".into(), vec![v, h]);
        add("wpe.weight".into(), vec![config.max_position_embeddings, h]);
        for layer in 0..config.num_hidden_layers {
            let p = format!("h.{layer}");
            for norm in ["ln_1", "ln_2"] {
                add(format!("{p}.{norm}.weight"), vec![h]);
                add(format!("{p}.{norm}.bias"), vec![h]);
            }
            for (name, inputs, outputs) in [
                ("attn.c_attn", h, 3 * h),
                ("attn.c_proj", h, h),
                ("mlp.c_fc", h, i),
                ("mlp.c_proj", i, h),
            ] {
                add(format!("{p}.{name}.weight"), vec![inputs, outputs]);
                add(format!("{p}.{name}.bias"), vec![outputs]);
            }
        }
        add("ln_f.weight".into(), vec![h]);
        add("ln_f.bias".into(), vec![h]);
        return shapes;
    }
    if config.family == Family::ModernBert {
        add("embeddings.tok_embeddings.weight".into(), vec![v, h]);
        let norm = |name: String, add: &mut dyn FnMut(String, Vec<usize>)| {
            add(format!("{name}.weight"), vec![h]);
            if shape.norm_bias {
                add(format!("{name}.bias"), vec![h]);
            }
        };
        norm("embeddings.norm".into(), &mut add);
        for layer in 0..config.num_hidden_layers {
            let p = format!("layers.{layer}");
            if layer > 0 {
                norm(format!("{p}.attn_norm"), &mut add);
            }
            norm(format!("{p}.mlp_norm"), &mut add);
            for (name, inputs, outputs, bias) in [
                ("attn.Wqkv", h, 3 * h, shape.qkv_bias),
                ("attn.Wo", h, h, shape.output_bias),
                ("mlp.Wi", h, 2 * i, shape.mlp_bias),
                ("mlp.Wo", i, h, shape.mlp_bias),
            ] {
                add(format!("{p}.{name}.weight"), vec![outputs, inputs]);
                if bias {
                    add(format!("{p}.{name}.bias"), vec![outputs]);
                }
            }
        }
        norm("final_norm".into(), &mut add);
        return shapes;
    }
    let (q, kv) = (
        config.num_attention_heads * shape.head_dim,
        shape.num_key_value_heads * shape.head_dim,
    );
    let variant = &shape.variant;
    let norm = |name: String, size: usize, add: &mut dyn FnMut(String, Vec<usize>)| {
        add(format!("{name}.weight"), vec![size]);
        if shape.norm_bias {
            add(format!("{name}.bias"), vec![size]);
        }
    };
    add(
        format!("{}.weight", config.family.word_embeddings()),
        vec![v, h],
    );
    for layer in 0..config.num_hidden_layers {
        let p = format!("layers.{layer}");
        for name in norm_names(config.family, layer).into_iter().flatten() {
            norm(format!("{p}.{name}"), h, &mut add);
        }
        let (attention, fused, output) = attention_names(config.family);
        let mut projections = match variant.qkv_layout {
            QkvLayout::Separate => vec![
                ("q_proj", h, q, shape.qkv_bias),
                ("k_proj", h, kv, shape.qkv_bias),
                ("v_proj", h, kv, shape.qkv_bias),
            ],
            _ => vec![(fused, h, q + 2 * kv, shape.qkv_bias)],
        };
        projections.push((output, q, h, shape.output_bias));
        for (name, inputs, outputs, bias) in projections {
            add(
                format!("{p}.{attention}.{name}.weight"),
                vec![outputs, inputs],
            );
            if bias {
                add(format!("{p}.{attention}.{name}.bias"), vec![outputs]);
            }
        }
        let qk_sizes = match variant.qk_norm {
            QkNorm::None => None,
            QkNorm::PerHead => Some((shape.head_dim, shape.head_dim)),
            QkNorm::AcrossHeads => Some((q, kv)),
        };
        if let Some((query, key)) = qk_sizes {
            norm(format!("{p}.{attention}.q_norm"), query, &mut add);
            norm(format!("{p}.{attention}.k_norm"), key, &mut add);
        }
        let [first, second, third] = feed_forward_names(config.family);
        let feed_forward = match variant.feed_forward {
            FeedForwardLayout::Plain => vec![(first, h, i), (second, i, h)],
            FeedForwardLayout::Gated => vec![(first, h, i), (second, h, i), (third, i, h)],
            FeedForwardLayout::FusedGated => vec![(first, h, 2 * i), (third, i, h)],
        };
        for (name, inputs, outputs) in feed_forward {
            add(format!("{p}.mlp.{name}.weight"), vec![outputs, inputs]);
            if shape.mlp_bias {
                add(format!("{p}.mlp.{name}.bias"), vec![outputs]);
            }
        }
    }
    norm(final_norm_name(config.family).into(), h, &mut add);
    shapes
}

/// Whether a tensor of [`pre_norm_tensor_shapes`] is a norm's weight (1
/// at initialisation).
fn is_pre_norm_weight(name: &str) -> bool {
    [
        "ln_1.weight",
        "ln_2.weight",
        "ln_f.weight",
        "layernorm.weight",
        "norm.weight",
        "layer_norm.weight",
    ]
    .iter()
    .any(|end| name.ends_with(end))
}
