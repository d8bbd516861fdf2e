//! The mlp_sgd program of examples/c/mlp_sgd.c (read its top comment: the recipe), through the safe API. Its
//! output matches the C program's line for line, loss bits included. tests/mlp.rs runs `run` against the C one.
use std::io::Write;

use tinygrad::{DType, Module, Optimizer, OptimizerKind, Tensor};

const N: i64 = 32;
const IN: i64 = 8;

fn train(out: &mut impl Write) -> Result<(), Box<dyn std::error::Error>> {
  let xs: Vec<f32> = (0..N * IN)
    .map(|k| ((((7 * (k / IN) + 3 * (k % IN)) % 11 - 5) as f64) / 5.0) as f32)
    .collect();
  let ys: Vec<i32> = (0..N as i32).map(|i| (7 * i % 11) % 4).collect();
  let x = Tensor::from_slice(&xs, &[N, IN], None)?;
  let y = Tensor::from_slice(&ys, &[N], None)?;
  let model = Module::sequential(&[
    Module::linear(IN, 16, true, None)?,
    Module::function("relu")?,
    Module::linear(16, 4, true, None)?,
  ])?;
  let opt = Optimizer::new(OptimizerKind::Sgd, &model.parameters()?, 0.1)?;
  for step in 1..=20 {
    opt.zero_grad()?;
    let loss = model.call(&x)?.sparse_categorical_crossentropy(&y, -1, 0.0, 1)?;
    loss.backward()?;
    let mut all = vec![loss];
    all.extend(opt.schedule_step()?);
    Tensor::realize_many(&all)?;
    let v: f32 = all[0].item()?;
    writeln!(out, "step {step} loss {:08x} {:.6}", v.to_bits(), v as f64)?;
  }
  Ok(())
}

/// The whole program's output into `out`; every handle it made is released before the last line.
pub fn run(out: &mut impl Write) -> Result<(), Box<dyn std::error::Error>> {
  tinygrad::manual_seed(1337);
  tinygrad::set_option("TRAINING", Some("1"))?;
  train(out)?;
  let a = Tensor::zeros(&[2, 3], DType::Float32, None)?;
  let b = Tensor::zeros(&[4, 5], DType::Float32, None)?;
  match a.matmul(&b) {
    Ok(_) => return Err("the bad matmul succeeded".into()),
    Err(e) => writeln!(out, "error {e}")?,
  }
  drop((a, b));
  writeln!(out, "live handles: {}", tinygrad::live_handles())?;
  Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
  run(&mut std::io::stdout().lock())
}
