"""Small, tested patches that fill moto 5.2.5's gaps for the sandbox (see DESIGN.md "The sandbox")."""
