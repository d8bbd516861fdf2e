//! Tensor methods a generic rule doesn't give: typed data in and out, shape, indexing, chunk, and the operators.
use core::fmt;
use core::ops::{Add, Div, Mul, Neg, Sub};

use crate::ffi::*;
use crate::{DType, Error, Result, Status, Tensor};
use tinygrad_sys as sys;

mod sealed {
  pub trait Sealed {}
}

/// A Rust type whose values are a tensor element type's bytes.
pub trait Element: Copy + sealed::Sealed {
  const DTYPE: DType;
  #[doc(hidden)]
  fn read(bytes: &[u8]) -> Self;
}

macro_rules! element {
  ($($t:ty => $d:ident),*) => {$(
    impl sealed::Sealed for $t {}
    impl Element for $t {
      const DTYPE: DType = DType::$d;
      fn read(b: &[u8]) -> Self { <$t>::from_ne_bytes(b.try_into().expect("element size")) }
    }
  )*};
}
element!(i8 => Int8, u8 => Uint8, i16 => Int16, u16 => Uint16, i32 => Int32, u32 => Uint32, i64 => Int64, u64 => Uint64,
         f32 => Float32, f64 => Float64);
impl sealed::Sealed for bool {}
impl Element for bool {
  const DTYPE: DType = DType::Bool;
  fn read(b: &[u8]) -> Self {
    b[0] != 0
  } // any nonzero byte, so no byte pattern is undefined behaviour
}

/// One entry of a Python-style index: `t[1, 2:8:2, None, ..., idx]`.
#[derive(Clone, Copy, Debug)]
pub enum Index<'a> {
  Int(i64),
  /// start:stop:step, None where Python leaves them out.
  Slice(Option<i64>, Option<i64>, Option<i64>),
  NewAxis,
  Ellipsis,
  /// An int tensor: numpy's advanced indexing.
  Tensor(&'a Tensor),
}

impl Index<'_> {
  fn raw(&self) -> sys::tg_index {
    let mut r = sys::tg_index {
      kind: sys::TG_INDEX_INT,
      ..Default::default()
    };
    match *self {
      Index::Int(i) => r.start = i,
      Index::Slice(a, b, c) => {
        r.kind = sys::TG_INDEX_SLICE;
        (r.has_start, r.start) = (a.is_some() as _, a.unwrap_or(0));
        (r.has_stop, r.stop) = (b.is_some() as _, b.unwrap_or(0));
        (r.has_step, r.step) = (c.is_some() as _, c.unwrap_or(0));
      }
      Index::NewAxis => r.kind = sys::TG_INDEX_NEWAXIS,
      Index::Ellipsis => r.kind = sys::TG_INDEX_ELLIPSIS,
      Index::Tensor(t) => (r.kind, r.tensor) = (sys::TG_INDEX_TENSOR, t.as_ptr()),
    }
    r
  }
}

fn as_bytes<T: Element>(data: &[T]) -> &[u8] {
  // SAFETY: Element types are plain numbers (and bool), without padding; every byte is initialized.
  unsafe { core::slice::from_raw_parts(data.as_ptr().cast(), size_of_val(data)) }
}

impl Tensor {
  /// A tensor holding a copy of `data` (row-major) with the given shape, of `T`'s dtype.
  pub fn from_slice<T: Element>(data: &[T], shape: &[i64], device: Option<&str>) -> Result<Tensor> {
    Self::from_bytes(as_bytes(data), T::DTYPE, shape, device)
  }

  /// A tensor holding a copy of `bytes` as elements of `dtype` (any dtype, float16 and bfloat16 included).
  pub fn from_bytes(bytes: &[u8], dtype: DType, shape: &[i64], device: Option<&str>) -> Result<Tensor> {
    let device = device.map(|d| cstring(d, "device")).transpose()?;
    let dev = device.as_ref().map_or(core::ptr::null(), |d| d.as_ptr());
    unsafe {
      Tensor::from_raw(sys::tg_tensor_from_data(
        bytes.as_ptr().cast(),
        bytes.len(),
        dtype as i32,
        shape.as_ptr(),
        shape.len(),
        dev,
      ))
    }
  }

  /// Realizes the tensor and copies its contents out, row-major, as bytes of its dtype.
  pub fn to_bytes(&self) -> Result<Vec<u8>> {
    let n = self.numel()? as usize * self.dtype()?.size()?;
    let mut out = vec![0u8; n];
    check(unsafe { sys::tg_tensor_to_data(self.as_ptr(), out.as_mut_ptr().cast(), n) })?;
    Ok(out)
  }

  /// Realizes the tensor and copies its contents out, row-major. `T` must be the tensor's element type.
  pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
    let dtype = self.dtype()?;
    if dtype != T::DTYPE {
      let msg = format!(
        "to_vec::<{}>() of a {} tensor (cast it first)",
        core::any::type_name::<T>(),
        dtype.name()?
      );
      return Err(Error::new(Status::ErrorDtype, msg));
    }
    Ok(self.to_bytes()?.chunks_exact(size_of::<T>()).map(T::read).collect())
  }

  /// The one element of a one-element tensor.
  pub fn item<T: Element>(&self) -> Result<T> {
    let v = self.to_vec::<T>()?;
    match v[..] {
      [x] => Ok(x),
      _ => Err(Error::new(
        Status::ErrorShape,
        format!("item() of a tensor of {} elements", v.len()),
      )),
    }
  }

  pub fn shape(&self) -> Result<Vec<i64>> {
    let mut shape = vec![0; self.ndim()? as usize];
    check(unsafe { sys::tg_tensor_shape(self.as_ptr(), shape.as_mut_ptr(), shape.len()) })?;
    Ok(shape)
  }

  pub fn requires_grad(&self) -> Result<bool> {
    match unsafe { sys::tg_tensor_requires_grad(self.as_ptr()) } {
      -1 => Err(Error::last()),
      r => Ok(r != 0),
    }
  }

  /// Up to `chunks` pieces along `dim`, ceil(size / chunks) each, as torch's chunk.
  pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    let mut out = vec![core::ptr::null_mut(); chunks.max(0) as usize];
    let n = unsafe { sys::tg_tensor_chunk(self.as_ptr(), chunks, dim, out.as_mut_ptr(), out.len()) };
    if n < 0 {
      let e = Error::last();
      release::<Tensor>(&out);
      return Err(e);
    }
    out.truncate(n as usize);
    take_all(out)
  }

  /// `t[idx...]`: basic indices give a view, tensor indices gather.
  pub fn getitem(&self, idx: &[Index]) -> Result<Tensor> {
    let raw: Vec<_> = idx.iter().map(Index::raw).collect();
    unsafe { Tensor::from_raw(sys::tg_tensor_getitem(self.as_ptr(), raw.as_ptr(), raw.len())) }
  }

  /// `t[idx...] = value` (broadcast and cast); `self` then refers to the result.
  pub fn setitem(&self, idx: &[Index], value: &Tensor) -> Result<()> {
    let raw: Vec<_> = idx.iter().map(Index::raw).collect();
    check(unsafe { sys::tg_tensor_setitem(self.as_ptr(), raw.as_ptr(), raw.len(), value.as_ptr()) })
  }
}

impl fmt::Debug for Tensor {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match (self.shape(), self.dtype()) {
      (Ok(s), Ok(d)) => write!(f, "Tensor({s:?}, {d:?})"),
      _ => write!(f, "Tensor({:p})", self.as_ptr()),
    }
  }
}

/// Operators can't return a Result: a failure (shapes that don't broadcast, ...) panics with the library's message.
fn or_panic(r: Result<Tensor>) -> Tensor {
  r.unwrap_or_else(|e| panic!("{e}"))
}

macro_rules! binary {
  ($($tr:ident $f:ident $scalar:ident),*) => {$(
    impl $tr<&Tensor> for &Tensor { type Output = Tensor; fn $f(self, b: &Tensor) -> Tensor { or_panic(Tensor::$f(self, b)) } }
    impl $tr<Tensor> for &Tensor { type Output = Tensor; fn $f(self, b: Tensor) -> Tensor { or_panic(Tensor::$f(self, &b)) } }
    impl $tr<&Tensor> for Tensor { type Output = Tensor; fn $f(self, b: &Tensor) -> Tensor { or_panic(Tensor::$f(&self, b)) } }
    impl $tr<Tensor> for Tensor { type Output = Tensor; fn $f(self, b: Tensor) -> Tensor { or_panic(Tensor::$f(&self, &b)) } }
    impl $tr<f64> for &Tensor { type Output = Tensor; fn $f(self, b: f64) -> Tensor { or_panic(self.$scalar(b)) } }
    impl $tr<f64> for Tensor { type Output = Tensor; fn $f(self, b: f64) -> Tensor { or_panic(self.$scalar(b)) } }
  )*};
}
binary!(Add add add_scalar, Sub sub sub_scalar, Mul mul mul_scalar, Div div div_scalar);

// The commutative ones with the scalar first (2.0 * &t).
macro_rules! scalar_first {
  ($($tr:ident $f:ident $scalar:ident),*) => {$(
    impl $tr<&Tensor> for f64 { type Output = Tensor; fn $f(self, b: &Tensor) -> Tensor { or_panic(b.$scalar(self)) } }
    impl $tr<Tensor> for f64 { type Output = Tensor; fn $f(self, b: Tensor) -> Tensor { or_panic(b.$scalar(self)) } }
  )*};
}
scalar_first!(Add add add_scalar, Mul mul mul_scalar);

impl Neg for &Tensor {
  type Output = Tensor;
  fn neg(self) -> Tensor {
    or_panic(Tensor::neg(self))
  }
}
impl Neg for Tensor {
  type Output = Tensor;
  fn neg(self) -> Tensor {
    or_panic(Tensor::neg(&self))
  }
}
