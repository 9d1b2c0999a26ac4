"""The catalog's maintenance tools: `catalog lint` and `catalog test` (catalog_check) and
`catalog new` (catalog_new). They may import the core only.
"""
