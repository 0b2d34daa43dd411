"""`seqlab explore`: a local web page with one live widget per lesson computation.

The page (``static/``) only renders; every number it shows comes from the JSON API
(``api``), which calls ``seqlab.labs`` and ``seqlab.tokenizer``. The server
(``server``) is the standard library's ``http.server``.
"""
