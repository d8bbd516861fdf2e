//! Language models from GGUF files (docs/llm.md): `Llm::load`, `tokenize`/`detokenize`, `eval` (logits), `sample`,
//! `generate` with a per-token closure. The raw `tg_llm_*` functions are in `tinygrad_sys`.
use core::ffi::{c_char, c_int, c_void, CStr};
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::ffi::*;
use crate::{Error, Llm, LlmSampling, Result, Tensor};
use tinygrad_sys as sys;

/// Text a `tg_llm_*` call writes into a caller's buffer: asked for its length first, then read whole.
fn text(f: impl Fn(*mut c_char, usize) -> i64) -> Result<String> {
  let n = f(core::ptr::null_mut(), 0);
  if n < 0 {
    return Err(Error::last());
  }
  let mut buf = vec![0u8; n as usize + 1];
  if f(buf.as_mut_ptr().cast(), buf.len()) < 0 {
    return Err(Error::last());
  }
  buf.truncate(n as usize);
  // a token stream may cut a UTF-8 character: such bytes come out replaced, as the Python binding does
  Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn count(n: i64) -> Result<i64> {
  if n < 0 { Err(Error::last()) } else { Ok(n) }
}

fn ids(tokens: &[i32]) -> Result<Tensor> {
  Tensor::from_slice(tokens, &[tokens.len() as i64], None)
}

/// llama.cpp's common defaults (tg_llm_sampling_default): temperature 0.8, top-k 40, top-p 0.95, no penalty.
pub fn sampling_defaults() -> LlmSampling {
  let mut s = LlmSampling::default();
  // fails only for a NULL pointer, which `s` is not
  unsafe { sys::tg_llm_sampling_default(&mut s) };
  s
}

/// The argmax at every step.
pub fn greedy() -> LlmSampling {
  LlmSampling { temperature: 0.0, ..sampling_defaults() }
}

struct Callback<'a> {
  f: &'a mut dyn FnMut(i32, &str) -> bool,
  panic: Option<Box<dyn Any + Send>>,
}

unsafe extern "C" fn token_trampoline(ud: *mut c_void, token: i64, piece: *const c_char) -> c_int {
  let cb = unsafe { &mut *ud.cast::<Callback>() };
  let piece = if piece.is_null() { Default::default() } else { unsafe { CStr::from_ptr(piece) }.to_string_lossy() };
  match catch_unwind(AssertUnwindSafe(|| (cb.f)(token as i32, &piece))) {
    Ok(stop) => stop as c_int,
    Err(p) => {
      cb.panic = Some(p); // resumed in `generate`, on the caller's side of the library
      1
    }
  }
}

impl Llm {
  /// The model in the GGUF file at `path`, on `device` (None: the default), with a KV cache of `context` positions
  /// (0: the file's context length, capped by the library).
  pub fn load(path: &str, device: Option<&str>, context: i64) -> Result<Llm> {
    let path = cstring(path, "path")?;
    let device = device.map(|s| cstring(s, "device")).transpose()?;
    let mut o: sys::tg_llm_options = Default::default();
    o.device = device.as_ref().map_or(core::ptr::null(), |s| s.as_ptr());
    o.context = context;
    unsafe { Llm::from_raw(sys::tg_llm_load(path.as_ptr(), &o)) }
  }

  /// Feeds `tokens` at the current position (which moves on by their count); the last token's logits, (vocab,).
  pub fn eval(&mut self, tokens: &[i32]) -> Result<Tensor> {
    let t = ids(tokens)?;
    unsafe { Tensor::from_raw(sys::tg_llm_eval(self.as_ptr(), t.as_ptr())) }
  }

  /// Empties the KV cache: the next eval starts at position 0.
  pub fn reset(&mut self) -> Result<()> {
    check(unsafe { sys::tg_llm_reset(self.as_ptr()) })
  }

  pub fn position(&self) -> Result<i64> {
    count(unsafe { sys::tg_llm_position(self.as_ptr()) })
  }

  pub fn context(&self) -> Result<i64> {
    count(unsafe { sys::tg_llm_context(self.as_ptr()) })
  }

  pub fn vocab_size(&self) -> Result<i64> {
    count(unsafe { sys::tg_llm_vocab_size(self.as_ptr()) })
  }

  /// The hyperparameters the model was built with, as JSON ({"arch": "llama", "n_layer": 22, ...}).
  pub fn config(&self) -> Result<String> {
    text(|b, n| unsafe { sys::tg_llm_config(self.as_ptr(), b, n) })
  }

  /// A GGUF metadata value as JSON text; an error naming the key when the file has none.
  pub fn metadata(&self, key: &str) -> Result<String> {
    let key = cstring(key, "key")?;
    text(|b, n| unsafe { sys::tg_llm_metadata(self.as_ptr(), key.as_ptr(), b, n) })
  }

  /// The token ids of `text` (equal to llama.cpp's); `add_special` adds the BOS/EOS the file asks for, `parse_special`
  /// reads control tokens' texts as those tokens.
  pub fn tokenize(&self, text: &str, add_special: bool, parse_special: bool) -> Result<Vec<i32>> {
    let text = cstring(text, "text")?;
    let t = unsafe { Tensor::from_raw(sys::tg_llm_tokenize(self.as_ptr(), text.as_ptr(), add_special as c_int, parse_special as c_int))? };
    t.to_vec::<i32>()
  }

  /// The text of `tokens`; `remove_special` drops a leading BOS and a trailing EOS, `unparse_special` writes control
  /// tokens' texts.
  pub fn detokenize(&self, tokens: &[i32], remove_special: bool, unparse_special: bool) -> Result<String> {
    let t = ids(tokens)?;
    text(|b, n| unsafe { sys::tg_llm_detokenize(self.as_ptr(), t.as_ptr(), remove_special as c_int, unparse_special as c_int, b, n) })
  }

  /// One token's text as a stream prints it (control tokens print nothing).
  pub fn token_piece(&self, token: i32) -> Result<String> {
    text(|b, n| unsafe { sys::tg_llm_token_piece(self.as_ptr(), token as i64, b, n) })
  }

  /// The file's beginning-of-sequence token, if it has one.
  pub fn bos(&self) -> Option<i32> {
    let t = unsafe { sys::tg_llm_bos(self.as_ptr()) };
    (t >= 0).then_some(t as i32)
  }

  /// The file's end-of-sequence token, if it has one.
  pub fn eos(&self) -> Option<i32> {
    let t = unsafe { sys::tg_llm_eos(self.as_ptr()) };
    (t >= 0).then_some(t as i32)
  }

  /// Whether `token` ends a generation.
  pub fn is_eog(&self, token: i32) -> Result<bool> {
    match unsafe { sys::tg_llm_is_eog(self.as_ptr(), token as i64) } {
      r if r < 0 => Err(Error::last()),
      r => Ok(r != 0),
    }
  }

  /// A token drawn from `logits` on the device; `history` feeds the repetition penalty.
  pub fn sample(&mut self, logits: &Tensor, history: &[i32], s: &LlmSampling) -> Result<i32> {
    let h = if history.is_empty() { None } else { Some(ids(history)?) };
    let hp = h.as_ref().map_or(core::ptr::null_mut(), |t| t.as_ptr());
    count(unsafe { sys::tg_llm_sample(self.as_ptr(), logits.as_ptr(), hp, s) }).map(|t| t as i32)
  }

  /// Feeds `prompt`, then samples up to `max_tokens` tokens, feeding each back, until an end-of-generation token, a
  /// full context, or `on_token(token, piece)` returning true. The tokens generated.
  pub fn generate(&mut self, prompt: &[i32], max_tokens: i64, s: &LlmSampling, mut on_token: impl FnMut(i32, &str) -> bool) -> Result<Vec<i32>> {
    let p = ids(prompt)?;
    let mut out = Vec::new();
    let mut f = |t: i32, piece: &str| {
      out.push(t);
      on_token(t, piece)
    };
    let mut cb = Callback { f: &mut f, panic: None };
    let n = unsafe { sys::tg_llm_generate(self.as_ptr(), p.as_ptr(), max_tokens, s, Some(token_trampoline), (&mut cb as *mut Callback).cast()) };
    if let Some(p) = cb.panic.take() {
      resume_unwind(p);
    }
    count(n)?;
    Ok(out)
  }
}
