//! Safe Rust API over libtinygrad (include/tinygrad.h): lazy tensors, autograd, nn modules and optimizers.
//!
//! ```no_run
//! use tinygrad::{DType, Tensor};
//! let a = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2], None)?;
//! let b = (&a * 2.0 + &a).relu()?;
//! assert_eq!(b.to_vec::<f32>()?, [3.0, 6.0, 9.0, 12.0]);
//! assert_eq!(b.dtype()?, DType::Float32);
//! # Ok::<(), tinygrad::Error>(())
//! ```
//!
//! Every call that can fail returns [`Result`], whose [`Error`] carries the library's status and message. Handles
//! (`Tensor`, `Module`, `Optimizer`, `State`, ...) own one reference each: `Clone` takes another, `Drop` releases it.
//! They are `Send` but not `Sync`: the header lets one thread at a time use a handle, and distinct handles be used
//! from distinct threads, which is what moving a value (not sharing it) gives. `Expr` is also `Sync` (immutable).
//! Operators (`+ - * /`, unary `-`) on tensors panic with the library's message on failure, since an operator can't
//! return a `Result`; the methods of the same names (`add`, `sub`, `mul`, `div`, `neg`, `*_scalar`) don't.
#[rustfmt::skip] // generated: scripts/bindgen/rust.py writes it, one item a line
mod api;
mod error;
mod ffi;
mod jit;
mod llm;
mod nn;
mod onnx;
mod tensor;

pub use api::*;
pub use error::{Error, Result};
pub use ffi::Handle;
pub use jit::TinyJit;
pub use llm::{greedy, sampling_defaults};
pub use nn::KernelInfo;
pub use onnx::{load_tensor_proto, Model};
pub use tensor::{Element, Index};
pub use tinygrad_sys as sys;

// Immutable and documented as usable from any thread at once.
unsafe impl Sync for Expr {}
