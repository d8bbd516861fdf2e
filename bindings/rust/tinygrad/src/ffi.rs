//! What the generated wrappers (api.rs) and the hand-written ones share: the handle trait, C strings, arrays of
//! handles, and output slots that become owned handles.
use core::borrow::Borrow;
use core::ffi::{CStr, c_char};
use core::ptr::NonNull;
use std::ffi::CString;

use crate::{Error, Result, Status};
use tinygrad_sys as sys;

/// A safe type owning one reference to a library handle.
pub trait Handle: Sized {
  type Raw;
  /// The raw pointer, still owned by `self` (borrowed by the callee, as every handle argument is).
  fn as_ptr(&self) -> *mut Self::Raw;
  /// Takes ownership of one reference.
  ///
  /// # Safety
  /// `p` must be a live handle of this type whose reference the caller owns and hands over.
  unsafe fn wrap(p: NonNull<Self::Raw>) -> Self;
  /// A new reference as the library returned it: NULL means the call failed, and this thread's last error says why.
  ///
  /// # Safety
  /// As `wrap`, for a non-NULL `p`.
  unsafe fn from_raw(p: *mut Self::Raw) -> Result<Self> {
    NonNull::new(p)
      .map(|p| unsafe { Self::wrap(p) })
      .ok_or_else(Error::last)
  }
  /// Gives the reference up to the caller (who must release it, or hand it to the library).
  fn into_raw(self) -> *mut Self::Raw {
    let p = self.as_ptr();
    core::mem::forget(self);
    p
  }
}

pub(crate) fn check(status: sys::tg_status) -> Result<()> {
  if status == sys::TG_OK {
    Ok(())
  } else {
    Err(Error::last())
  }
}

pub(crate) fn cstring(s: &str, arg: &str) -> Result<CString> {
  CString::new(s).map_err(|_| {
    Error::new(
      Status::ErrorInvalidArgument,
      format!("argument `{arg}` contains a NUL byte"),
    )
  })
}

/// Arrays whose one count the C function shares must have equal lengths.
pub(crate) fn same_len(names: &str, lens: &[usize]) -> Result<usize> {
  match lens.windows(2).all(|w| w[0] == w[1]) {
    true => Ok(lens[0]),
    false => Err(Error::new(
      Status::ErrorInvalidArgument,
      format!("{names}: lengths differ ({lens:?})"),
    )),
  }
}

pub(crate) fn raw_ptrs<T: Handle>(hs: &[impl Borrow<T>]) -> Vec<*mut T::Raw> {
  hs.iter().map(|h| h.borrow().as_ptr()).collect()
}

/// A copy of a string the library returned; NULL is a failure.
pub(crate) unsafe fn string(p: *const c_char) -> Result<String> {
  if p.is_null() {
    Err(Error::last())
  } else {
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
  }
}

pub(crate) unsafe fn string_or_empty(p: *const c_char) -> String {
  unsafe { string(p) }.unwrap_or_default()
}

/// An output slot a successful call filled with a new reference.
pub(crate) fn take<T: Handle>(p: *mut T::Raw) -> Result<T> {
  NonNull::new(p)
    .map(|p| unsafe { T::wrap(p) })
    .ok_or_else(|| Error::new(Status::ErrorInternal, "a successful call left an output slot empty"))
}

pub(crate) fn take_all<T: Handle>(ps: Vec<*mut T::Raw>) -> Result<Vec<T>> {
  ps.into_iter().map(take).collect() // on an empty slot the references taken so far drop with the error
}

pub(crate) fn take_n<T: Handle, const N: usize>(ps: [*mut T::Raw; N]) -> Result<[T; N]> {
  Ok(take_all(ps.to_vec())?.try_into().unwrap_or_else(|_| unreachable!()))
}

/// Releases what a failed call may have left in its output slots (nothing, by the header's rules; this makes sure).
pub(crate) fn release<T: Handle>(ps: &[*mut T::Raw]) {
  for &p in ps {
    drop(NonNull::new(p).map(|p| unsafe { T::wrap(p) }));
  }
}
