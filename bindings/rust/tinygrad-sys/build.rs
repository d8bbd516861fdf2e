//! Links libtinygrad: from TINYGRAD_LIB_DIR when set, else as pkg-config finds it. The directory is passed on to
//! dependents (DEP_TINYGRAD_LIB_DIR, through `links`) so their tests and binaries get an rpath to it too.
use std::{env, process::Command};

fn main() {
  println!("cargo:rerun-if-env-changed=TINYGRAD_LIB_DIR");
  println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
  let dirs = match env::var("TINYGRAD_LIB_DIR") {
    Ok(dir) if !dir.is_empty() => {
      println!("cargo:rustc-link-lib=dylib=tinygrad");
      vec![dir]
    }
    _ => pkg_config().unwrap_or_else(|why| {
      panic!("tinygrad-sys: can't find libtinygrad ({why}): set TINYGRAD_LIB_DIR to the directory holding libtinygrad.so, or install it with its tinygrad.pc where pkg-config looks (PKG_CONFIG_PATH)")
    }),
  };
  for d in &dirs {
    println!("cargo:rustc-link-search=native={d}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
  }
  // Read by the safe crate's build script as DEP_TINYGRAD_LIB_DIR (link args don't propagate to dependents).
  println!("cargo:lib_dir={}", dirs.join(":"));
}

/// `pkg-config --libs tinygrad`: its -L directories, with its -l libraries emitted as link instructions.
fn pkg_config() -> Result<Vec<String>, String> {
  let out = Command::new("pkg-config")
    .args(["--libs", "tinygrad"])
    .output()
    .map_err(|e| format!("pkg-config: {e}"))?;
  if !out.status.success() {
    return Err(format!(
      "pkg-config --libs tinygrad: {}",
      String::from_utf8_lossy(&out.stderr).trim()
    ));
  }
  let mut dirs = vec![];
  for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
    if let Some(d) = flag.strip_prefix("-L") {
      dirs.push(d.to_string());
    } else if let Some(l) = flag.strip_prefix("-l") {
      println!("cargo:rustc-link-lib=dylib={l}");
    }
  }
  Ok(dirs)
}
