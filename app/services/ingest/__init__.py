"""Parsing uploaded files into validated arrays. Nothing here touches the database."""
