use core::fmt;

use crate::Status;
use crate::ffi::string_or_empty;
use tinygrad_sys as sys;

/// A failed library call: the status code, its constant's name ("TG_ERROR_SHAPE") and the library's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
  pub status: Status,
  pub code_name: String,
  pub message: String,
}

pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
  /// This thread's last error, as the library keeps it. Read right after the failing call, on its thread: that is
  /// what every wrapper in this crate does.
  pub fn last() -> Self {
    let code = unsafe { sys::tg_last_error() };
    let message = unsafe { string_or_empty(sys::tg_last_error_message()) };
    match Status::from_raw(code) {
      Some(Status::Ok) | None => Self::new(
        Status::ErrorInternal,
        format!("a call failed without setting an error: {message}"),
      ),
      Some(status) => Self {
        status,
        code_name: status.name(),
        message,
      },
    }
  }

  /// An error raised on this side of the ABI (a NUL in a string, a wrong element type), named like the library's.
  pub fn new(status: Status, message: impl Into<String>) -> Self {
    Self {
      status,
      code_name: status.name(),
      message: message.into(),
    }
  }
}

impl fmt::Display for Error {
  fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{}: {}", self.code_name, self.message)
  }
}

impl std::error::Error for Error {}
