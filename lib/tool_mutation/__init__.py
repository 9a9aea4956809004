"""tool_mutation"""
