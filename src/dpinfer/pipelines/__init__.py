"""One-call workflows that make a release and post-process it (above both ``release`` and
``inference``, which never import each other): :func:`dpinfer.private_glm` (:mod:`.glm`)."""
