"""Language emitters for scripts/bindgen.py: one module per language, each with generate(manifest) -> {path: text}."""
