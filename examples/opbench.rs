use candle_core::{Device, Tensor, DType};
use std::time::Instant;
fn time<F: FnMut() -> candle_core::Result<Tensor>>(name: &str, mut f: F) {
    let _ = f().unwrap();
    let n = 10;
    let t = Instant::now();
    for _ in 0..n { let _ = f().unwrap(); }
    println!("{name}: {:.2} ms", t.elapsed().as_secs_f64() * 1000.0 / n as f64);
}
fn main() -> candle_core::Result<()> {
    let d = Device::Cpu;
    println!("threads {}", candle_core::utils::get_num_threads());
    let x = Tensor::randn(0f32, 1., (512, 768), &d)?;
    let w = Tensor::randn(0f32, 1., (2304, 768), &d)?;
    let wt_c = w.t()?.contiguous()?;
    time("x @ w.t() (strided)", || x.matmul(&w.t()?));
    time("x @ wt contiguous", || x.matmul(&wt_c));
    let w2 = Tensor::randn(0f32, 1., (3072, 768), &d)?;
    time("ffn up strided", || x.matmul(&w2.t()?));
    let q = Tensor::randn(0f32, 1., (12, 512, 64), &d)?;
    let k = Tensor::randn(0f32, 1., (12, 512, 64), &d)?;
    time("q @ k.t batched", || q.matmul(&k.t()?));
    let kt = k.t()?.contiguous()?;
    time("q @ kt contiguous batched", || q.matmul(&kt));
    let s = Tensor::randn(0f32, 1., (12, 512, 512), &d)?;
    time("softmax", || candle_nn::ops::softmax_last_dim(&s));
    time("p @ v", || s.matmul(&q));
    let h = Tensor::randn(0f32, 1., (512, 3072), &d)?;
    time("gelu_erf", || h.gelu_erf());
    time("gelu tanh", || h.gelu());
    let g = Tensor::ones(768, DType::F32, &d)?; let b = Tensor::zeros(768, DType::F32, &d)?;
    time("layer_norm", || candle_nn::ops::layer_norm(&x, &g, &b, 1e-12));
    time("scale mul", || &s * 0.125);
    time("transpose contiguous", || q.transpose(0,1)?.contiguous());
    Ok(())
}
