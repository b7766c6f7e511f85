"""The Streamlit front end's pages and helpers: a client of the HTTP API, with no interview logic of its own."""
