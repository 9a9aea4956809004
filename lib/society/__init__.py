"""society"""
