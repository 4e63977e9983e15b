"""``attractor serve``: the HTTP API (spec section 9.5), its event stream and the web page."""
