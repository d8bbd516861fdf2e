//! Hand-written methods of modules, optimizers, states, plans and expressions: those whose outputs need a count
//! first or hold strings borrowed from the handle.
use core::ffi::CStr;
use core::fmt;

use crate::ffi::*;
use crate::{DType, Error, Expr, Module, Optimizer, OptimizerKind, Plan, Result, State, Status, Tensor};
use tinygrad_sys as sys;

/// Fills `n` output slots through `fill`, which returns a status or a count (negative on error).
fn outputs(n: usize, fill: impl FnOnce(*mut *mut sys::tg_tensor, usize) -> i64) -> Result<Vec<Tensor>> {
  let mut out = vec![core::ptr::null_mut(); n];
  let r = fill(out.as_mut_ptr(), n);
  if r < 0 {
    let e = Error::last();
    release::<Tensor>(&out);
    return Err(e);
  }
  take_all(out)
}

impl Module {
  /// The parameters an optimizer updates (tensors sharing the module's buffers).
  pub fn parameters(&self) -> Result<Vec<Tensor>> {
    outputs(self.parameter_count()?, |p, n| {
      match unsafe { sys::tg_module_parameters(self.as_ptr(), p, n) } {
        sys::TG_OK => 0,
        _ => -1,
      }
    })
  }
}

impl Optimizer {
  /// An optimizer of `kind` with tinygrad's defaults but the learning rate.
  pub fn new(kind: OptimizerKind, params: &[impl core::borrow::Borrow<Tensor>], lr: f64) -> Result<Optimizer> {
    let mut o = Optimizer::options_default(kind)?;
    o.lr = lr;
    Self::with_options(kind, params, &o)
  }

  /// An optimizer of `kind` with options (start from `Optimizer::options_default(kind)`).
  pub fn with_options(
    kind: OptimizerKind,
    params: &[impl core::borrow::Borrow<Tensor>],
    o: &crate::OptimizerOptions,
  ) -> Result<Optimizer> {
    let o = Some(o);
    match kind {
      OptimizerKind::Sgd => Self::sgd(params, o),
      OptimizerKind::Adam => Self::adam(params, o),
      OptimizerKind::Adamw => Self::adamw(params, o),
      OptimizerKind::Lars => Self::lars(params, o),
      OptimizerKind::Lamb => Self::lamb(params, o),
      OptimizerKind::Muon => Self::muon(params, o),
    }
  }

  /// tinygrad's schedule_step: assigns one step lazily and returns the tensors to realize (with the loss, in one
  /// `Tensor::realize_many`, for the fewest kernels).
  pub fn schedule_step(&self) -> Result<Vec<Tensor>> {
    let n = unsafe { sys::tg_optimizer_schedule_step(self.as_ptr(), core::ptr::null_mut(), 0) };
    if n < 0 {
      return Err(Error::last());
    }
    outputs(n as usize, |p, cap| unsafe {
      sys::tg_optimizer_schedule_step(self.as_ptr(), p, cap)
    })
  }

  /// The params as the optimizer holds them (deduplicated).
  pub fn params(&self) -> Result<Vec<Tensor>> {
    let n = unsafe { sys::tg_optimizer_params(self.as_ptr(), core::ptr::null_mut(), 0) };
    if n < 0 {
      return Err(Error::last());
    }
    outputs(n as usize, |p, cap| unsafe {
      sys::tg_optimizer_params(self.as_ptr(), p, cap)
    })
  }

  /// A state list by tinygrad's attribute name: "b" (SGD, LARS, Muon), "m", "v", "b1_t", "b2_t" (Adam, AdamW, LAMB).
  pub fn state(&self, name: &str) -> Result<Vec<Tensor>> {
    let c = cstring(name, "name")?;
    let n = unsafe { sys::tg_optimizer_state(self.as_ptr(), c.as_ptr(), core::ptr::null_mut(), 0) };
    if n < 0 {
      return Err(Error::last());
    }
    outputs(n as usize, |p, cap| unsafe {
      sys::tg_optimizer_state(self.as_ptr(), c.as_ptr(), p, cap)
    })
  }
}

impl State {
  /// The dtype and shape of the entry `name`, without realizing it.
  pub fn info(&self, name: &str) -> Result<(DType, Vec<i64>)> {
    let c = cstring(name, "name")?;
    let (mut dtype, mut ndim) = (0, 0);
    let null = core::ptr::null_mut();
    check(unsafe { sys::tg_state_info(self.as_ptr(), c.as_ptr(), &mut dtype, null, 0, &mut ndim) })?;
    let mut shape = vec![0; ndim as usize];
    check(unsafe {
      sys::tg_state_info(
        self.as_ptr(),
        c.as_ptr(),
        null.cast(),
        shape.as_mut_ptr(),
        shape.len(),
        null.cast(),
      )
    })?;
    let dtype =
      DType::from_raw(dtype).ok_or_else(|| Error::new(Status::ErrorInternal, format!("unknown dtype {dtype}")))?;
    Ok((dtype, shape))
  }
}

/// One kernel of a plan, copied out of it.
#[derive(Clone, Debug)]
pub struct KernelInfo {
  pub name: String,
  pub source: String,
  /// Sizes of the buffers the kernel takes, output first.
  pub buffer_nbytes: Vec<i64>,
  /// Seconds of its last timed run; -1 before one.
  pub time_s: f64,
  pub threads: i64,
  pub ops: u64,
  pub mem: u64,
}

impl Plan {
  pub fn kernel(&self, i: usize) -> Result<KernelInfo> {
    let mut k = sys::tg_kernel_info::default();
    check(unsafe { sys::tg_plan_kernel(self.as_ptr(), i, &mut k) })?;
    let s = |p| unsafe { string(p) };
    let nbytes = match k.n_buffers {
      0 => vec![],
      n => unsafe { core::slice::from_raw_parts(k.buffer_nbytes, n) }.to_vec(),
    };
    let (name, source) = (s(k.name)?, s(k.source)?);
    Ok(KernelInfo {
      name,
      source,
      buffer_nbytes: nbytes,
      time_s: k.time_s,
      threads: k.threads,
      ops: k.ops,
      mem: k.mem,
    })
  }

  /// Every kernel, in launch order.
  pub fn kernels(&self) -> Result<Vec<KernelInfo>> {
    (0..self.kernel_count()?).map(|i| self.kernel(i)).collect()
  }
}

impl fmt::Display for Expr {
  /// The expression as infix text.
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let n = unsafe { sys::tg_expr_render(self.as_ptr(), core::ptr::null_mut(), 0) };
    if n < 0 {
      return Err(fmt::Error);
    }
    let mut buf = vec![0u8; n as usize + 1];
    unsafe { sys::tg_expr_render(self.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    f.write_str(
      &CStr::from_bytes_until_nul(&buf)
        .map_err(|_| fmt::Error)?
        .to_string_lossy(),
    )
  }
}

impl fmt::Debug for Expr {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "Expr({self})")
  }
}
