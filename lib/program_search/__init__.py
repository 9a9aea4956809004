"""program_search"""
