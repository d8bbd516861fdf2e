//! The mlp example against the C program it repeats: the same lines, loss bits included.
#[allow(dead_code)]
#[path = "../examples/mlp.rs"]
mod mlp;

use std::path::PathBuf;
use std::process::Command;

#[test]
fn mlp_matches_c_reference() {
  let build = std::env::var_os("TINYGRAD_BUILD")
    .map(PathBuf::from)
    .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../build"));
  let exe = build.join("example_mlp_sgd");
  let c = Command::new(&exe)
    .output()
    .unwrap_or_else(|e| panic!("running {}: {e}", exe.display()));
  assert!(
    c.status.success(),
    "{} failed: {}",
    exe.display(),
    String::from_utf8_lossy(&c.stderr)
  );
  let mut out = Vec::new();
  mlp::run(&mut out).unwrap();
  let (rust, c) = (String::from_utf8(out).unwrap(), String::from_utf8(c.stdout).unwrap());
  assert_eq!(rust.lines().count(), 22, "{rust}");
  for (r, c) in rust.lines().zip(c.lines()) {
    assert_eq!(r, c);
  }
  assert_eq!(rust, c);
  assert!(rust.ends_with("live handles: 0\n"));
}
