//! How a head's picture spreads the colours over its values.
//!
//! A few extreme cells decide a min–max scale: a decoder's first token
//! (the attention sink, and its outsized similarity with every token) or
//! a token's similarity with itself. Scaled to them, the other cells of
//! SmolLM2's heads all get the lowest colour. So by default a picture's
//! range is its values' 1st to 99th percentile (cells beyond take the end
//! colours), a causal model's first token (its row and column) is left out
//! of that range, and attention may be drawn on a log scale, as
//! researchers do to see anything past the sink. The app's thumbnails and
//! heatmaps, its exports and `headscope export` use the same rules.

use super::{ColorMap, ValueRange};
use serde::{Deserialize, Serialize};

/// Which values set a picture's colour range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeRule {
    /// The 1st to the 99th percentile of the values.
    #[default]
    Percentiles,
    /// Their minimum to their maximum.
    Full,
}

impl RangeRule {
    pub const ALL: [RangeRule; 2] = [RangeRule::Percentiles, RangeRule::Full];

    /// The rule as a menu item and in a legend.
    pub fn label(&self) -> &'static str {
        match self {
            RangeRule::Percentiles => "1st–99th percentile",
            RangeRule::Full => "min–max",
        }
    }
}

impl std::str::FromStr for RangeRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "percentiles" | "percentile" | "p1-99" => Ok(RangeRule::Percentiles),
            "full" | "min-max" | "minmax" => Ok(RangeRule::Full),
            _ => Err(format!(
                "unknown colour range '{s}' (choose percentiles or full)"
            )),
        }
    }
}

/// Everything that decides a picture's colours but the map itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ColourScale {
    pub rule: RangeRule,
    /// Leave the first token's row and column out of the range (a causal
    /// model's sink); they take the end colours.
    pub without_first_token: bool,
    /// Colour log₁₀ of the values (attention, which is positive).
    pub log: bool,
}

/// The smallest value a log scale shows: attention below it (float32
/// softmax underflow, or masked to 0) takes the lowest colour.
pub const LOG_FLOOR: f32 = 1e-8;

impl ColourScale {
    /// The values a picture colours: `values` as they are, or their log₁₀
    /// (at least [`LOG_FLOOR`]'s) on a log scale; NaN (masked) stays NaN.
    pub fn coloured(&self, values: &[f32]) -> Vec<f32> {
        if !self.log {
            return values.to_vec();
        }
        values
            .iter()
            .map(|&v| {
                if v.is_nan() {
                    v
                } else {
                    v.max(LOG_FLOOR).log10()
                }
            })
            .collect()
    }

    /// The colour range of a side×side picture of `coloured` values
    /// (those [`ColourScale::coloured`] gave).
    pub fn range(&self, map: ColorMap, coloured: &[f32], side: usize) -> ValueRange {
        let of = |values: &[f32]| match self.rule {
            RangeRule::Full => ValueRange::auto(map, values),
            RangeRule::Percentiles => percentile_range(map, values),
        };
        if self.without_first_token && side > 1 && coloured.len() == side * side {
            let rest: Vec<f32> = coloured
                .chunks(side)
                .skip(1)
                .flat_map(|row| row[1..].iter().copied())
                .filter(|v| v.is_finite())
                .collect();
            if !rest.is_empty() {
                return of(&rest);
            }
        }
        of(coloured)
    }

    /// What the legend says of the scale, e.g. "1st–99th percentile,
    /// without the first token, log scale".
    pub fn caption(&self) -> String {
        let mut parts = vec![self.rule.label().to_string()];
        if self.without_first_token {
            parts.push("without the first token".into());
        }
        if self.log {
            parts.push("log scale".into());
        }
        parts.join(", ")
    }

    /// The range in the values' own units, for a legend's ends: 10^x on a
    /// log scale.
    pub fn shown_range(&self, range: ValueRange) -> ValueRange {
        if self.log {
            ValueRange {
                min: 10f32.powf(range.min),
                max: 10f32.powf(range.max),
            }
        } else {
            range
        }
    }
}

/// At most this many values are read for a percentile: evenly spaced
/// ones of a larger matrix (a 3,000-token head has 9 million), which
/// places a colour range's ends as well as all of them.
const PERCENTILE_SAMPLE: usize = 1 << 18;

/// The 1st to 99th percentile of the finite `values` (symmetric about 0,
/// at the 99th percentile of |v|, for a diverging map); where those
/// coincide (a matrix mostly of one value), the full range instead.
pub fn percentile_range(map: ColorMap, values: &[f32]) -> ValueRange {
    let step = values.len().div_ceil(PERCENTILE_SAMPLE).max(1);
    let mut sample: Vec<f32> = values
        .iter()
        .step_by(step)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if sample.is_empty() {
        return ValueRange::auto(map, values);
    }
    if map.is_diverging() {
        let mut magnitudes: Vec<f32> = sample.iter().map(|v| v.abs()).collect();
        let m = quantile(&mut magnitudes, 0.99);
        return if m > 0.0 {
            ValueRange { min: -m, max: m }
        } else {
            ValueRange::symmetric(values)
        };
    }
    let low = quantile(&mut sample, 0.01);
    let high = quantile(&mut sample, 0.99);
    if low < high {
        ValueRange::new(low, high)
    } else {
        ValueRange::of(values)
    }
}

/// The `q` quantile of `values` (the nearest rank, no interpolation, so
/// the result is one of the values); reorders them.
fn quantile(values: &mut [f32], q: f64) -> f32 {
    let rank = ((values.len() - 1) as f64 * q).round() as usize;
    let (_, value, _) = values.select_nth_unstable_by(rank, f32::total_cmp);
    *value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_ignore_a_few_extreme_cells() {
        // 1,000 values 0..1 and two huge ones (a sink, a self-similarity).
        let mut values: Vec<f32> = (0..1000).map(|i| i as f32 / 1000.0).collect();
        values.extend([500.0, 900.0]);
        let range = percentile_range(ColorMap::Viridis, &values);
        assert!((range.min - 0.01).abs() < 0.002, "{range:?}");
        assert!((range.max - 0.99).abs() < 0.002, "{range:?}");
        let full = ColourScale {
            rule: RangeRule::Full,
            ..Default::default()
        };
        assert_eq!(full.range(ColorMap::Viridis, &values, 0).max, 900.0);
        // Diverging: symmetric about 0.
        let signed: Vec<f32> = values.iter().map(|v| v - 0.5).collect();
        let range = percentile_range(ColorMap::RdBu, &signed);
        assert_eq!(range.min, -range.max);
        // A matrix of one value falls back to the full range.
        assert_eq!(
            percentile_range(ColorMap::Viridis, &[0.0, 0.0, 0.0, 1.0]),
            ValueRange::new(0.0, 1.0)
        );
    }

    #[test]
    fn the_first_token_is_left_out_of_the_range() {
        // 3×3: the first row and column hold the sink's large values.
        let values = [1.0, f32::NAN, f32::NAN, 0.9, 0.05, f32::NAN, 0.8, 0.1, 0.1];
        let scale = ColourScale {
            rule: RangeRule::Full,
            without_first_token: true,
            log: false,
        };
        let range = scale.range(ColorMap::Viridis, &values, 3);
        assert_eq!((range.min, range.max), (0.05, 0.1));
        assert_eq!(scale.caption(), "min–max, without the first token");
    }

    #[test]
    fn a_log_scale_colours_log10_and_shows_the_values() {
        let scale = ColourScale {
            log: true,
            ..Default::default()
        };
        let coloured = scale.coloured(&[1.0, 0.01, 0.0, f32::NAN]);
        assert_eq!(&coloured[..3], &[0.0, -2.0, -8.0]);
        assert!(coloured[3].is_nan());
        let shown = scale.shown_range(ValueRange {
            min: -2.0,
            max: 0.0,
        });
        assert!((shown.min - 0.01).abs() < 1e-6 && shown.max == 1.0);
        assert_eq!(scale.caption(), "1st–99th percentile, log scale");
        assert_eq!("full".parse::<RangeRule>(), Ok(RangeRule::Full));
    }
}
