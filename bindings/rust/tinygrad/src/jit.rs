//! TinyJit over a Rust closure.
use core::borrow::Borrow;
use core::ffi::c_void;
use core::mem::ManuallyDrop;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::ffi::*;
use crate::{Error, Jit, Result, Status, Tensor};
use tinygrad_sys as sys;

type JitFn = dyn FnMut(&[Tensor]) -> Result<Vec<Tensor>> + Send;

/// What the callback sees: the closure, and what it failed with, to hand back from `call` intact (the library
/// passes only a status through).
struct Shared {
  f: Box<JitFn>,
  err: Option<Error>,
  panic: Option<Box<dyn Any + Send>>,
}

/// A captured function (tinygrad's TinyJit): the first call runs the closure, the second captures the kernels its
/// realizes launch, later calls replay them with the new inputs and don't run the closure. Outputs of a replay are
/// the capture's buffers: copy them out before the next call. Derefs to [`Jit`] for `call_count`, `reset`, `plan`.
pub struct TinyJit {
  jit: ManuallyDrop<Jit>, // released in Drop before `shared`, which the library holds until then
  shared: *mut Shared,
}

// The closure is Send, and the library serializes calls to one JIT; `call` takes &mut self besides.
unsafe impl Send for TinyJit {}

unsafe extern "C" fn trampoline(
  ud: *mut c_void,
  inputs: *const *mut sys::tg_tensor,
  n_inputs: usize,
  outputs: *mut *mut sys::tg_tensor,
  n_outputs: usize,
) -> sys::tg_status {
  let sh = unsafe { &mut *ud.cast::<Shared>() };
  // Borrowed inputs seen as Tensors without taking references: Tensor is a transparent non-null pointer.
  let ins: &[Tensor] = match n_inputs {
    0 => &[],
    n => unsafe { core::slice::from_raw_parts(inputs.cast::<Tensor>(), n) },
  };
  let err = match catch_unwind(AssertUnwindSafe(|| (sh.f)(ins))) {
    Ok(Ok(outs)) if outs.len() == n_outputs => {
      for (i, t) in outs.into_iter().enumerate() {
        unsafe { *outputs.add(i) = t.into_raw() };
      }
      return sys::TG_OK;
    }
    Ok(Ok(outs)) => Error::new(
      Status::ErrorInvalidArgument,
      format!(
        "the jit function returned {} outputs, {} were asked for",
        outs.len(),
        n_outputs
      ),
    ),
    Ok(Err(e)) => e,
    Err(p) => {
      sh.panic = Some(p); // resumed in `call`, on the caller's side of the library
      return sys::TG_ERROR_INTERNAL;
    }
  };
  let code = err.status as i32;
  sh.err = Some(err);
  code
}

impl TinyJit {
  pub fn new(f: impl FnMut(&[Tensor]) -> Result<Vec<Tensor>> + Send + 'static) -> Result<TinyJit> {
    let shared = Box::into_raw(Box::new(Shared {
      f: Box::new(f),
      err: None,
      panic: None,
    }));
    match unsafe { Jit::from_raw(sys::tg_jit_create(Some(trampoline), shared.cast())) } {
      Ok(jit) => Ok(TinyJit {
        jit: ManuallyDrop::new(jit),
        shared,
      }),
      Err(e) => {
        drop(unsafe { Box::from_raw(shared) });
        Err(e)
      }
    }
  }

  /// Calls the JIT with `inputs`, returning `n_outputs` outputs. A closure's error comes back as it was returned, a
  /// panic in it resumes here.
  pub fn call(&mut self, inputs: &[impl Borrow<Tensor>], n_outputs: usize) -> Result<Vec<Tensor>> {
    let ins = raw_ptrs(inputs);
    let mut out = vec![core::ptr::null_mut(); n_outputs];
    let status = unsafe { sys::tg_jit_call(self.jit.as_ptr(), ins.as_ptr(), ins.len(), out.as_mut_ptr(), n_outputs) };
    let sh = unsafe { &mut *self.shared };
    let (err, panic) = (sh.err.take(), sh.panic.take());
    if status != sys::TG_OK {
      let e = err.unwrap_or_else(Error::last);
      release::<Tensor>(&out);
      if let Some(p) = panic {
        resume_unwind(p);
      }
      return Err(e);
    }
    take_all(out)
  }
}

impl core::ops::Deref for TinyJit {
  type Target = Jit;
  fn deref(&self) -> &Jit {
    &self.jit
  }
}

impl Drop for TinyJit {
  fn drop(&mut self) {
    // The JIT goes first: it may call the closure until released.
    unsafe { ManuallyDrop::drop(&mut self.jit) };
    drop(unsafe { Box::from_raw(self.shared) });
  }
}
