//! The safe API against hand-computed values, the library's errors, and its reference counts. Every test holds LOCK:
//! several assert on the process-wide live handle count, which a test on another thread would move.
use std::sync::{Mutex, MutexGuard};

use tinygrad::*;

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> MutexGuard<'static, ()> {
  LOCK.lock().unwrap_or_else(|e| e.into_inner()) // a failed test must not fail the others
}

fn t(v: &[f32], shape: &[i64]) -> Tensor {
  Tensor::from_slice(v, shape, None).unwrap()
}

#[test]
fn arithmetic_and_operators() -> Result<()> {
  let _g = lock();
  let a = t(&[1., 2., 3., 4.], &[2, 2]);
  let b = t(&[10., 20., 30., 40.], &[2, 2]);
  assert_eq!((&a + &b).to_vec::<f32>()?, [11., 22., 33., 44.]);
  assert_eq!((&b - &a).to_vec::<f32>()?, [9., 18., 27., 36.]);
  assert_eq!((&a * &b).to_vec::<f32>()?, [10., 40., 90., 160.]);
  assert_eq!((&b / &a).to_vec::<f32>()?, [10., 10., 10., 10.]);
  assert_eq!((-&a).to_vec::<f32>()?, [-1., -2., -3., -4.]);
  assert_eq!((&a * 2.0 + 1.0).to_vec::<f32>()?, [3., 5., 7., 9.]);
  assert_eq!((2.0 * a.clone() - 0.5).to_vec::<f32>()?, [1.5, 3.5, 5.5, 7.5]);
  assert_eq!((a.clone() / 4.0).to_vec::<f32>()?, [0.25, 0.5, 0.75, 1.]);
  assert_eq!(a.add(&b)?.mul_scalar(0.5)?.to_vec::<f32>()?, [5.5, 11., 16.5, 22.]);
  assert_eq!(a.matmul(&b)?.to_vec::<f32>()?, [70., 100., 150., 220.]);
  assert_eq!(a.sum(&[1], false)?.to_vec::<f32>()?, [3., 7.]);
  assert_eq!(a.sum(&[], false)?.item::<f32>()?, 10.);
  assert_eq!(a.max(&[0], true)?.shape()?, [1, 2]);
  assert_eq!(a.mean(&[], false)?.item::<f32>()?, 2.5);
  assert_eq!(t(&[-1., 0., 2.], &[3]).relu()?.to_vec::<f32>()?, [0., 0., 2.]);
  assert_eq!(
    a.lt(&b.div_scalar(10.)?)?.to_vec::<bool>()?,
    [false, false, false, false]
  );
  assert_eq!(
    a.gt(&Tensor::full(&[2], 2.5, DType::Float32, None)?)?
      .to_vec::<bool>()?,
    [false, false, true, true]
  );
  let i = Tensor::from_slice(&[7i32, -7, 9, 1], &[4], None)?;
  assert_eq!(
    i.idiv(&Tensor::from_slice(&[2i32, 2, 0, 1], &[4], None)?)?
      .to_vec::<i32>()?,
    [3, -3, 0, 1]
  );
  assert_eq!(i.cast(DType::Float64)?.to_vec::<f64>()?, [7., -7., 9., 1.]);
  assert_eq!(
    Tensor::arange(0., 5., 1., DType::Int64, None)?.to_vec::<i64>()?,
    [0, 1, 2, 3, 4]
  );
  assert_eq!(Tensor::eye(2, DType::Uint8, None)?.to_vec::<u8>()?, [1, 0, 0, 1]);
  Ok(())
}

#[test]
fn movement_and_multi_output() -> Result<()> {
  let _g = lock();
  let a = Tensor::arange(0., 6., 1., DType::Float32, None)?.reshape(&[2, 3])?;
  assert_eq!(
    (a.shape()?, a.ndim()?, a.numel()?, a.dtype()?),
    (vec![2, 3], 2, 6, DType::Float32)
  );
  assert_eq!(a.permute(&[1, 0])?.to_vec::<f32>()?, [0., 3., 1., 4., 2., 5.]);
  assert_eq!(a.flip(&[1])?.to_vec::<f32>()?, [2., 1., 0., 5., 4., 3.]);
  assert_eq!(Tensor::cat(&[&a, &a], 0)?.shape()?, [4, 3]);
  assert_eq!(a.roll(&[1], &[1])?.to_vec::<f32>()?, [2., 0., 1., 5., 3., 4.]);
  assert_eq!(a.roll(&[1, 2], &[1]).unwrap_err().status, Status::ErrorInvalidArgument); // slices sharing a count
  let (values, indices) = t(&[3., 1., 2.], &[3]).sort(0, false)?;
  assert_eq!(
    (values.to_vec::<f32>()?, indices.to_vec::<i32>()?),
    (vec![1., 2., 3.], vec![1, 2, 0])
  );
  let parts = a.split(&[1, 2], 1)?;
  assert_eq!(
    parts.iter().map(|p| p.shape()).collect::<Result<Vec<_>>>()?,
    [vec![2, 1], vec![2, 2]]
  );
  assert_eq!(a.chunk(3, 1)?.len(), 3);
  let r = Tensor::arange(0., 10., 1., DType::Int32, None)?;
  assert_eq!(
    r.getitem(&[Index::Slice(Some(2), Some(8), Some(2))])?.to_vec::<i32>()?,
    [2, 4, 6]
  );
  assert_eq!(
    a.getitem(&[Index::Ellipsis, Index::Int(-1)])?.to_vec::<f32>()?,
    [2., 5.]
  );
  r.setitem(
    &[Index::Slice(None, Some(3), None)],
    &Tensor::full(&[], -1., DType::Int32, None)?,
  )?;
  assert_eq!(r.to_vec::<i32>()?[..5], [-1, -1, -1, 3, 4]);
  Ok(())
}

#[test]
fn data_round_trips() -> Result<()> {
  let _g = lock();
  assert_eq!(
    Tensor::from_slice(&[true, false, true], &[3], None)?.to_vec::<bool>()?,
    [true, false, true]
  );
  assert_eq!(
    Tensor::from_slice(&[u64::MAX, 1], &[2], None)?.to_vec::<u64>()?,
    [u64::MAX, 1]
  );
  assert_eq!(
    Tensor::from_slice(&[-128i8, 127], &[2, 1], None)?.to_vec::<i8>()?,
    [-128, 127]
  );
  let h = Tensor::from_bytes(&[0x00, 0x3c, 0x00, 0xc0], DType::Float16, &[2], None)?; // 1.0, -2.0 as IEEE half
  assert_eq!(h.cast(DType::Float32)?.to_vec::<f32>()?, [1., -2.]);
  assert_eq!(h.to_bytes()?, [0x00, 0x3c, 0x00, 0xc0]);
  assert_eq!(DType::Float32.size()?, 4);
  assert_eq!(DType::Bfloat16.name()?, "bfloat16");
  assert_eq!(DType::Int32.promote(DType::Float16)?, DType::Float16);
  assert_eq!(version(), sys::TG_VERSION_STRING);
  // The library writes struct_size back as the size it wrote: equal only if the generated layout is the header's.
  let o = Optimizer::options_default(OptimizerKind::Muon)?;
  assert_eq!(
    (o.struct_size, o.ns_steps, o.n_ns_coefficients),
    (size_of::<OptimizerOptions>(), 5, 3)
  );
  assert_eq!(o.ns_coefficients[..3], [3.4445, -4.775, 2.0315]);
  assert_eq!(counters_get()?.struct_size, size_of::<Counters>());
  Ok(())
}

#[test]
fn errors_carry_the_library_message_and_code() {
  let _g = lock();
  let a = Tensor::zeros(&[2, 3], DType::Float32, None).unwrap();
  let b = Tensor::zeros(&[4, 5], DType::Float32, None).unwrap();
  let e = a.matmul(&b).unwrap_err();
  assert_eq!((e.status, e.code_name.as_str()), (Status::ErrorShape, "TG_ERROR_SHAPE"));
  assert_eq!(e.message, "matmul: shapes (2,3) and (4,5) don't match");
  assert_eq!(
    e.to_string(),
    "TG_ERROR_SHAPE: matmul: shapes (2,3) and (4,5) don't match"
  );
  let dyn_err: Box<dyn std::error::Error> = Box::new(e);
  assert!(dyn_err.to_string().starts_with("TG_ERROR_SHAPE"));
  let e = Tensor::from_slice(&[1f32, 2.], &[3], None).unwrap_err(); // 8 bytes for 3 floats
  assert_eq!(e.status, Status::ErrorInvalidArgument, "{e}");
  assert_eq!(a.to_vec::<i32>().unwrap_err().status, Status::ErrorDtype);
  assert_eq!(
    Tensor::zeros(&[1], DType::Float32, Some("NOPE")).unwrap_err().status,
    Status::ErrorDevice
  );
  let e = Tensor::zeros(&[1], DType::Float32, Some("C\0PU")).unwrap_err();
  assert_eq!(
    (e.status, e.message.as_str()),
    (Status::ErrorInvalidArgument, "argument `device` contains a NUL byte")
  );
  let e = set_option("NO_SUCH_OPTION", Some("1")).unwrap_err();
  assert!(e.message.contains("NO_SUCH_OPTION"), "{e}");
  assert_eq!(t(&[1.], &[1]).grad().unwrap_err().status, Status::ErrorInvalidArgument);
  assert_eq!(
    Module::function("no_such_layer").unwrap_err().status,
    Status::ErrorInvalidArgument
  );
  // Operators panic with the message instead.
  let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| &a + &b)).unwrap_err();
  let msg = p.downcast_ref::<String>().unwrap();
  assert!(msg.starts_with("TG_ERROR_SHAPE: "), "{msg}");
}

#[test]
fn drop_releases_and_clone_retains() -> Result<()> {
  let _g = lock();
  let start = live_handles();
  {
    let a = t(&[1., 2.], &[2]);
    let b = a.exp()?.add(&a)?;
    let m = Module::linear(2, 3, true, None)?;
    let ps = m.parameters()?;
    assert_eq!(ps.len(), 2);
    assert_eq!(live_handles(), start + 5);
    let c = b.clone(); // another reference to the same handle: retained, not copied
    assert_eq!(live_handles(), start + 5);
    drop(b);
    assert_eq!(live_handles(), start + 5);
    assert_eq!(c.shape()?, [2]); // the clone's reference keeps it alive
    drop(c);
    assert_eq!(live_handles(), start + 4);
    let e = Expr::variable("n", 1, 8)?;
    let e2 = e.clone();
    drop(e);
    assert_eq!((live_handles(), e2.to_string()), (start + 5, "n".to_string()));
  }
  assert_eq!(live_handles(), start);
  let _ = t(&[1.], &[1]).matmul(&t(&[1., 2.], &[2])); // failures leak nothing either
  assert_eq!(live_handles(), start);
  Ok(())
}

#[test]
fn tensors_move_between_threads() -> Result<()> {
  let _g = lock();
  let a = t(&[1., 2., 3.], &[3]);
  let (v, made_there) = std::thread::spawn(move || -> Result<_> {
    let b = a.mul_scalar(3.0)?;
    Ok((b.to_vec::<f32>()?, Tensor::ones(&[2], DType::Int32, None)?))
  })
  .join()
  .unwrap()?;
  assert_eq!(v, [3., 6., 9.]);
  assert_eq!(made_there.to_vec::<i32>()?, [1, 1]);
  // Errors are per thread: one raised there is read there.
  let e = std::thread::spawn(|| Tensor::zeros(&[1], DType::Float32, Some("NOPE")).unwrap_err())
    .join()
    .unwrap();
  assert_eq!(e.status, Status::ErrorDevice);
  Ok(())
}

#[test]
fn autograd_and_optimizers() -> Result<()> {
  let _g = lock();
  let x = t(&[1., -2., 3.], &[3]);
  x.set_requires_grad(true)?;
  assert!(x.requires_grad()?);
  x.mul(&x)?.sum(&[], false)?.backward()?;
  assert_eq!(x.grad()?.to_vec::<f32>()?, [2., -4., 6.]);
  let w = t(&[1., 2.], &[2]);
  let loss = w.mul(&w)?.sum(&[], false)?;
  let g = Tensor::gradient(&loss, &[&w])?;
  assert_eq!(g[0].to_vec::<f32>()?, [2., 4.]);

  set_option("TRAINING", Some("1"))?;
  let p = t(&[1., 2.], &[2]);
  let mut o = Optimizer::options_default(OptimizerKind::Sgd)?;
  o.lr = 0.5;
  let opt = Optimizer::with_options(OptimizerKind::Sgd, &[&p], &o)?;
  assert_eq!(opt.params()?.len(), 1);
  opt.zero_grad()?;
  p.sum(&[], false)?.backward()?; // grad 1 everywhere
  opt.step()?;
  assert_eq!(p.to_vec::<f32>()?, [0.5, 1.5]);
  assert_eq!(opt.lr()?.to_vec::<f32>()?, [0.5]);
  let adam = Optimizer::new(OptimizerKind::Adam, &[&p], 0.1)?;
  adam.zero_grad()?;
  p.sum(&[], false)?.backward()?;
  let upd = adam.schedule_step()?;
  Tensor::realize_many(&upd)?;
  let v = p.to_vec::<f32>()?; // Adam's first step moves each weight by lr
  assert!((v[0] - 0.4).abs() < 1e-5 && (v[1] - 1.4).abs() < 1e-5, "{v:?}");
  assert!(Optimizer::sgd(&[&p], Some(&Optimizer::options_default(OptimizerKind::Adam)?)).is_err());
  set_option("TRAINING", None)?;
  assert_eq!(get_option("TRAINING")?, 0.0);
  Ok(())
}

#[test]
fn modules_and_state() -> Result<()> {
  let _g = lock();
  manual_seed(7);
  let m = Module::linear(3, 2, true, None)?;
  assert_eq!(m.kind()?, "Linear");
  assert_eq!(m.get("weight")?.shape()?, [2, 3]);
  let x = Tensor::ones(&[4, 3], DType::Float32, None)?;
  assert_eq!(m.call(&x)?.shape()?, [4, 2]);
  let s = m.state()?;
  assert_eq!(
    (s.count()?, s.name(0)?, s.name(1)?),
    (2, "weight".into(), "bias".into())
  );
  assert_eq!(s.info("weight")?, (DType::Float32, vec![2, 3]));
  let w = m.get("weight")?.to_vec::<f32>()?;
  let path = std::env::temp_dir().join(format!("tinygrad-rust-{}.safetensors", std::process::id()));
  let p = path.to_str().unwrap();
  s.metadata_set("note", "hi")?;
  s.save(p)?;
  let loaded = State::load(p, None)?;
  std::fs::remove_file(&path).ok();
  assert_eq!(loaded.get("weight")?.to_vec::<f32>()?, w);
  assert_eq!(
    (loaded.metadata_key(0)?, loaded.metadata_value(0)?),
    ("note".into(), "hi".into())
  );
  let fresh = Module::linear(3, 2, true, None)?;
  fresh.load_state(&loaded, true)?;
  assert_eq!(fresh.get("weight")?.to_vec::<f32>()?, w);
  let bad = State::create()?;
  bad.set("weight", &Tensor::zeros(&[5], DType::Float32, None)?)?;
  assert_eq!(fresh.load_state(&bad, false).unwrap_err().status, Status::ErrorShape);
  assert_eq!(
    State::load("/nonexistent/x.safetensors", None).unwrap_err().status,
    Status::ErrorIo
  );
  Ok(())
}

#[test]
fn expressions() -> Result<()> {
  let _g = lock();
  let n = Expr::variable("n", 1, 10)?;
  let e = Expr::binary(
    BinOp::Add,
    &Expr::binary(BinOp::Mul, &n, &Expr::const_(2)?)?,
    &Expr::const_(3)?,
  )?;
  assert_eq!(e.eval(&["n"], &[4])?, 11);
  assert_eq!(e.bounds()?, (5, 23));
  assert!(e.to_string().contains('n'), "{e}");
  assert_eq!(
    Expr::binary(BinOp::Idiv, &n, &Expr::const_(0)?).unwrap_err().status,
    Status::ErrorInvalidArgument
  );
  assert!(e.eval(&["n"], &[]).is_err());
  let shared = std::sync::Arc::new(e); // Sync: one expression read from two threads
  let s2 = shared.clone();
  assert_eq!(
    std::thread::spawn(move || s2.eval(&["n"], &[1]).unwrap())
      .join()
      .unwrap(),
    5
  );
  Ok(())
}

#[test]
fn jit_and_plans() -> Result<()> {
  let _g = lock();
  let start = live_handles();
  {
    let mut jit = TinyJit::new(|ins| Ok(vec![ins[0].mul_scalar(2.0)?.add(&ins[1])?]))?;
    for k in 0..4 {
      let a = t(&[k as f32, 1.], &[2]);
      let out = jit.call(&[&a, &a], 1)?;
      assert_eq!(out[0].to_vec::<f32>()?, [3. * k as f32, 3.]);
    }
    assert_eq!(jit.call_count()?, 4);
    let plan = jit.plan()?;
    assert!(plan.kernel_count()? >= 1);
    let mut failing = TinyJit::new(|_| Err(Error::new(Status::ErrorUnsupported, "not today")))?;
    let e = failing.call(&[t(&[1.], &[1])], 1).unwrap_err();
    assert_eq!((e.status, e.message.as_str()), (Status::ErrorUnsupported, "not today"));
    let mut panicking = TinyJit::new(|_| panic!("inside"))?;
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| panicking.call(&[t(&[1.], &[1])], 1))).is_err());

    let x = t(&[1., 2., 3.], &[3]).exp()?.sum(&[], false)?;
    let plan = Plan::create(&[&x])?;
    let kernels = plan.kernels()?;
    assert!(!kernels.is_empty() && !kernels[0].name.is_empty() && !kernels[0].source.is_empty());
    plan.run()?;
    assert!((x.item::<f32>()? - (1f32.exp() + 2f32.exp() + 3f32.exp())).abs() < 1e-3);
    assert!(plan.run().is_err()); // a plan runs once
  }
  assert_eq!(live_handles(), start);
  Ok(())
}

#[test]
fn onnx_model_runs_a_conformance_test() -> Result<()> {
  let _g = lock();
  let dir = "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1";
  let m = Model::load(&format!("{dir}/model.onnx"), None)?;
  assert_eq!(m.inputs()?, ["x"]);
  assert_eq!(m.outputs()?.len(), 1);
  let x = load_tensor_proto(&format!("{dir}/test_data_set_0/input_0.pb"), None)?;
  let want = load_tensor_proto(&format!("{dir}/test_data_set_0/output_0.pb"), None)?.to_vec::<f32>()?;
  for _ in 0..3 {
    let got = m.run(&[&x])?[0].to_vec::<f32>()?;
    assert!(got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5));
  }
  assert_eq!(m.run(&[]).unwrap_err().status, Status::ErrorInvalidArgument);
  assert_eq!(Model::load("/nonexistent.onnx", None).unwrap_err().status, Status::ErrorIo);
  Ok(())
}
