//! Loops compiled for the widest vectors the CPU has: the analysis's
//! passes over a head's P and S, and a map's sums of its blocks.
//!
//! The crate is built for plain x86-64 (two f64 lanes), so that one binary
//! runs everywhere; the figures' passes over a head's P and S are mostly
//! f32 → f64 sums and comparisons that gain from AVX2's and AVX-512's wider
//! lanes. [`widest!`] defines a function that calls an `#[inline(always)]`
//! body compiled three times — AVX-512 (with the `avx512` feature), AVX2,
//! plain — and picks one at run time by the kernels' own checks
//! (`kernels::has_avx512`, `kernels::has_avx2`), so that the figures and
//! the pass take the same path. Every helper the body should take along is
//! `#[inline(always)]` too.
//!
//! The results are the same to the bit on every path: Rust neither fuses a
//! multiply and an add nor reorders a sum, and every sum that vectorises
//! says its order itself (`lane_sum`'s eight accumulators).

/// `widest! { fn name(arg: Type, ...) -> Output = body; }` defines `name`,
/// which calls `body(arg, ...)` compiled for the widest vectors the CPU
/// has.
macro_rules! widest {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty = $body:path;) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) -> $out {
            #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
            #[target_feature(enable = "avx512f")]
            fn avx512($($arg: $ty),*) -> $out {
                $body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) -> $out {
                $body($($arg),*)
            }
            #[cfg(all(target_arch = "x86_64", feature = "avx512"))]
            if $crate::kernels::has_avx512() {
                // SAFETY: the CPU has AVX-512F, checked just above.
                return unsafe { avx512($($arg),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::kernels::has_avx2() {
                // SAFETY: the CPU has AVX2 (and FMA), checked just above.
                return unsafe { avx2($($arg),*) };
            }
            $body($($arg),*)
        }
    };
}

pub(crate) use widest;
