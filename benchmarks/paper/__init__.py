"""Paper reproductions: one module per table of a paper, each row beside the paper's number, with
its settings in a config file beside the module (``dgt.toml``) rather than in environment variables."""
