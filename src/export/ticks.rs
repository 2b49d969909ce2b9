//! Round tick values for axes and colour bars: steps of 1, 2 or 5 times a
//! power of ten, so that a figure's labels read 0, 0.2, 0.4 … rather than
//! the ends of its range and the evenly spaced values between them.

/// The least step of 1, 2 or 5 × 10ᵏ at least `least` long (1 for a
/// `least` that is not a positive number).
pub fn nice_step(least: f64) -> f64 {
    if !(least.is_finite() && least > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(least.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&step| step >= least * (1.0 - 1e-9))
        .unwrap_or(10.0 * power)
}

/// The multiples of `step` from `min` to `max`, rounded to the step's
/// decimals (no 0.30000000000000004).
pub fn multiples(min: f64, max: f64, step: f64) -> Vec<f64> {
    if !(step > 0.0 && min.is_finite() && max.is_finite()) || max < min {
        return Vec::new();
    }
    let first = (min / step - 1e-9).ceil() as i64;
    let last = (max / step + 1e-9).floor() as i64;
    let scale = 10f64.powi(decimals(step) as i32 + 1);
    (first..=last)
        .map(|k| ((k as f64 * step) * scale).round() / scale)
        .map(|v| if v == 0.0 { 0.0 } else { v })
        .collect()
}

/// Round ticks over `min`..`max`: the smallest 1-2-5 step that gives at
/// most `most` of them (at least two where the range allows).
pub fn nice_ticks(min: f64, max: f64, most: usize) -> Vec<f64> {
    if max.partial_cmp(&min) != Some(std::cmp::Ordering::Greater) {
        return vec![min];
    }
    // From a step too small for `most` ticks up to the first that fits.
    let mut step = nice_step((max - min) / (2 * most.max(2)) as f64);
    loop {
        let ticks = multiples(min, max, step);
        if ticks.len() <= most.max(2) {
            return ticks;
        }
        step = nice_step(step * 1.5);
    }
}

/// The decimals a value on a grid of `step` needs (0 for 1, 2, 5, 10 …;
/// 1 for 0.1, 0.2, 0.5; …).
pub fn decimals(step: f64) -> usize {
    if !(step > 0.0 && step.is_finite()) {
        return 0;
    }
    (-(step.log10() + 1e-9).floor()).max(0.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.17), 0.2);
        assert_eq!(nice_step(0.2), 0.2);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(12.0), 20.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(decimals(0.2), 1);
        assert_eq!(decimals(0.05), 2);
        assert_eq!(decimals(5.0), 0);
    }

    #[test]
    fn ticks_fall_on_round_values_within_the_range() {
        // The colour bar of the issue: −1.62 … 4.82 read −1.62, 1.60, 4.82.
        assert_eq!(nice_ticks(-1.62, 4.82, 5), vec![0.0, 2.0, 4.0]);
        assert_eq!(nice_ticks(0.0, 1.0, 6), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(nice_ticks(0.0, 1.0, 5), vec![0.0, 0.5, 1.0]);
        assert_eq!(multiples(0.0, 3.0, 0.2).last(), Some(&3.0));
        assert_eq!(nice_ticks(0.013, 0.087, 5), vec![0.02, 0.04, 0.06, 0.08]);
        assert_eq!(nice_ticks(2.0, 2.0, 5), vec![2.0]);
        // The smallest step that fits: 1, 2, 3, 4 rather than 2, 4.
        assert_eq!(nice_ticks(0.1, 4.4, 5), vec![1.0, 2.0, 3.0, 4.0]);
    }
}
