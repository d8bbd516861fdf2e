//! Greedy generation with a GGUF language model through the safe API: `llm <model.gguf> <prompt> <n>`. Prints the
//! prompt and the generated text, then the token ids of both, as examples/c/llm.c prints them with --ids
//! (tests/bindings/compare_llm.sh compares the id lines of C, Python and Rust).
use tinygrad::{greedy, Llm};

fn main() -> Result<(), Box<dyn std::error::Error>> {
  let args: Vec<String> = std::env::args().collect();
  if args.len() != 4 {
    eprintln!("usage: llm <model.gguf> <prompt> <n>");
    std::process::exit(2);
  }
  let mut m = Llm::load(&args[1], None, 0)?;
  let prompt = m.tokenize(&args[2], true, false)?;
  let mut text = String::new();
  let tokens = m.generate(&prompt, args[3].parse()?, &greedy(), |_, piece| {
    text.push_str(piece);
    false
  })?;
  println!("{}{}", args[2], text);
  let line = |ids: &[i32]| ids.iter().map(|t| format!(" {t}")).collect::<String>();
  println!("prompt:{}", line(&prompt));
  println!("tokens:{}", line(&tokens));
  Ok(())
}
