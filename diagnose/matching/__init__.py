"""The pieces of the matcher: log extraction, normalisation, literal prefilter, indexes.

``diagnose.matcher`` puts them together; import from there.
"""
