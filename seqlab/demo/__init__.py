"""The demo: tokenizer, training and generation strung together on built-in data (``seqlab demo``).

It sits above every other area: ``pipeline`` imports seqlab.tokenizer, seqlab.training and
seqlab.inference; ``cli`` registers the subcommand. Nothing else imports the demo.
"""
