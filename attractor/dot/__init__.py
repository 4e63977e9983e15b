"""The pipeline language: DOT lexer and parser, graph model, attribute schema,
model stylesheet, edge conditions and the transforms applied after parsing."""
