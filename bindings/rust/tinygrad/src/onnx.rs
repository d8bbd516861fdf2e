//! ONNX models (docs/onnx.md): `Model::load`, `inputs`/`outputs`, `run`. The raw `tg_onnx_*` functions are in
//! `tinygrad_sys`; the generated `OnnxModel` methods take the model as their first argument.
use crate::ffi::*;
use crate::{OnnxModel, Result, Tensor};
use tinygrad_sys as sys;

/// An ONNX model loaded for running.
pub type Model = OnnxModel;

impl OnnxModel {
  /// The model at `path` on `device` (None: the default device).
  pub fn load(path: &str, device: Option<&str>) -> Result<Model> {
    let path = cstring(path, "path")?;
    let device = device.map(|s| cstring(s, "device")).transpose()?;
    let mut o: sys::tg_onnx_options = Default::default();
    o.device = device.as_ref().map_or(core::ptr::null(), |s| s.as_ptr());
    unsafe { Model::from_raw(sys::tg_onnx_load(path.as_ptr(), &o)) }
  }

  /// The names of the inputs `run` takes, in order.
  pub fn inputs(&self) -> Result<Vec<String>> {
    (0..OnnxModel::input_count(self)? as usize).map(|i| OnnxModel::input_name(self, i)).collect()
  }

  /// The names of the outputs `run` gives, in order.
  pub fn outputs(&self) -> Result<Vec<String>> {
    (0..OnnxModel::output_count(self)? as usize).map(|i| OnnxModel::output_name(self, i)).collect()
  }

  /// Runs the model on `inputs` (in `inputs()`' order); repeated runs with the same shapes replay the captured kernels.
  pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let n = OnnxModel::output_count(self)? as usize;
    let ins: Vec<*mut sys::tg_tensor> = inputs.iter().map(|t| t.as_ptr()).collect();
    let mut out = vec![core::ptr::null_mut(); n];
    let status = unsafe { sys::tg_onnx_run(self.as_ptr(), ins.as_ptr(), ins.len(), out.as_mut_ptr(), n) };
    if let Err(e) = check(status) {
      release::<Tensor>(&out);
      return Err(e);
    }
    take_all(out)
  }
}

/// The tensor in a file holding one serialized TensorProto (ONNX's test data), on `device` (None: the default).
pub fn load_tensor_proto(path: &str, device: Option<&str>) -> Result<Tensor> {
  let path = cstring(path, "path")?;
  let device = device.map(|s| cstring(s, "device")).transpose()?;
  unsafe { Tensor::from_raw(sys::tg_onnx_load_tensor(path.as_ptr(), device.as_ref().map_or(core::ptr::null(), |s| s.as_ptr()))) }
}
