//! An rpath to the directory tinygrad-sys linked libtinygrad from, so tests and examples run without LD_LIBRARY_PATH.
fn main() {
  if let Ok(dirs) = std::env::var("DEP_TINYGRAD_LIB_DIR") {
    for d in dirs.split(':').filter(|d| !d.is_empty()) {
      println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
    }
  }
}
